// The official conformance suite (@modelcontextprotocol/conformance, tests/tools) against
// skill-mcp. The suite speaks HTTP only, so supergateway bridges it to the stdio server in
// its stateless mode: one fresh skill-mcp per HTTP request, which is exactly the
// 2026-07-28 lifecycle. The scenarios here are those that apply to a stdio server without
// the suite's diagnostic tools; README.md ("Conformance") lists the others and why.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, REPO, serverEnv } from './lib.mjs';

const CONFORMANCE = process.env.SKILL_MCP_CONFORMANCE;
const SUPERGATEWAY = process.env.SKILL_MCP_SUPERGATEWAY;
const NODE22 = process.env.SKILL_MCP_INSPECTOR_NODE;
const skip =
  CONFORMANCE && SUPERGATEWAY && NODE22
    ? false
    : 'SKIP: the conformance suite, supergateway or node >= 22 is not installed (npm install --prefix tests/tools)';

let gateway;
let url;
let out;

function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
  });
}

async function startGateway() {
  const port = await freePort();
  const env = serverEnv({ SKILLS_DIR: join(REPO, 'skills') });
  const child = spawn(NODE22, [SUPERGATEWAY, '--stdio', BIN, '--outputTransport', 'streamableHttp', '--port', String(port)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  await new Promise((resolveUp, reject) => {
    const timer = setTimeout(() => reject(new Error(`supergateway did not start:\n${log}`)), 20000);
    const watch = (chunk) => {
      log += chunk.toString();
      if (log.includes('Listening on port')) {
        clearTimeout(timer);
        resolveUp();
      }
    };
    child.stdout.on('data', watch);
    child.stderr.on('data', watch);
    child.on('exit', () => reject(new Error(`supergateway exited:\n${log}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

/** Runs one scenario; its checks, from the results the suite writes. */
function scenario(name, specVersion) {
  const dir = mkdtempSync(join(out, `${name}-`));
  const args = [CONFORMANCE, 'server', '--url', url, '--scenario', name, '-o', dir];
  if (specVersion) args.push('--spec-version', specVersion);
  return new Promise((resolveRun, reject) => {
    const child = spawn(NODE22, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (c) => (text += c.toString()));
    child.stderr.on('data', (c) => (text += c.toString()));
    child.on('error', reject);
    child.on('exit', () => {
      const runs = readdirSync(dir);
      if (runs.length !== 1) return reject(new Error(`no results for ${name}:\n${text.slice(-3000)}`));
      resolveRun(JSON.parse(readFileSync(join(dir, runs[0], 'checks.json'), 'utf8')));
    });
  });
}

function failures(checks) {
  return checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage}`);
}

describe('conformance suite through supergateway', { skip }, () => {
  before(async () => {
    out = mkdtempSync(join(tmpdir(), 'skill-mcp-conformance-'));
    ({ child: gateway, url } = await startGateway());
  });
  after(() => {
    if (gateway && gateway.exitCode === null) gateway.kill('SIGTERM');
    if (out) rmSync(out, { recursive: true, force: true });
  });

  for (const name of ['sep-2640-skills-enumeration', 'sep-2640-skills-directory', 'sep-2640-skills-manifest']) {
    test(`${name} (2025-11-25): no failure`, async () => {
      const checks = await scenario(name);
      assert.ok(checks.length > 1, 'checks ran');
      assert.deepEqual(failures(checks), []);
    });
  }

  for (const name of ['sep-2164-resource-not-found', 'input-required-result-unsupported-methods']) {
    test(`${name} (2026-07-28): every check passes`, async () => {
      const checks = await scenario(name, '2026-07-28');
      assert.ok(checks.length > 1, 'checks ran');
      for (const c of checks) assert.equal(c.status, 'SUCCESS', `${c.id}: ${c.errorMessage}`);
    });
  }

  test('server-stateless (2026-07-28): every testable check passes', async () => {
    const checks = await scenario('server-stateless', '2026-07-28');
    const byId = new Map(checks.map((c) => [c.id, c.status]));
    for (const id of [
      'sep-2575-request-meta-invalid-missing-meta',
      'sep-2575-request-meta-invalid-missing-protocol-version',
      'sep-2575-request-meta-invalid-missing-client-capabilities',
      'sep-2575-request-meta-client-info-optional',
      'sep-2575-server-implements-discover',
      'sep-2575-server-identifies-in-result-meta',
      'sep-2575-server-declares-prompts-in-discover',
      'sep-2575-discover-capabilities-match-handlers',
      'sep-2575-server-unsupported-version-error',
      'sep-2575-http-server-method-not-found-404-initialize',
      'sep-2575-http-server-method-not-found-404-ping',
      'sep-2575-http-server-method-not-found-404',
    ]) {
      assert.equal(byId.get(id), 'SUCCESS', id);
    }
    // The rest need the suite's diagnostic tools (test_missing_capability, ...), which a
    // real server does not have; the suite itself calls them "Not testable".
    for (const f of failures(checks)) assert.match(f, /Not testable: .*diagnostic tool/, f);
  });
});
