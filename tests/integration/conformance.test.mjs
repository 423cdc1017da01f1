// The official conformance suite (@modelcontextprotocol/conformance, tests/tools) against
// skill-mcp. The suite speaks HTTP only, so supergateway bridges it to the stdio server in
// its stateless mode: one fresh skill-mcp per HTTP request, which is exactly the
// 2026-07-28 lifecycle. The scenarios here are those that apply to a stdio server without
// the suite's diagnostic tools; docs/wire.md (§11) lists the others and why.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, REPO, serverEnv } from './lib.mjs';
import { skipOrRequire } from './required_tools.mjs';

const CONFORMANCE = process.env.SKILL_MCP_CONFORMANCE;
const SUPERGATEWAY = process.env.SKILL_MCP_SUPERGATEWAY;
const NODE22 = process.env.SKILL_MCP_INSPECTOR_NODE;
// Missing tools SKIP, or fail under SKILL_MCP_REQUIRE_TOOLS=1 (required_tools.mjs).
const skip = skipOrRequire(
  !(CONFORMANCE && SUPERGATEWAY && NODE22) &&
    'SKIP: the conformance suite, supergateway or node >= 22 is not installed (npm install --prefix tests/tools)',
  'the conformance suite with supergateway',
);

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

const shellQuote = (s) => `'${s.replaceAll("'", "'\\''")}'`;

/** What the server was asked since the last call: every request line, parsed. */
let requestLog;
function takeRequests() {
  if (!existsSync(requestLog)) return [];
  const lines = readFileSync(requestLog, 'utf8').split('\n').filter(Boolean);
  rmSync(requestLog);
  return lines.map((l) => JSON.parse(l));
}

/** Which revision a scenario spoke: 2025 (initialize) or 2026-07-28 (the _meta envelope). */
function eraOf(requests) {
  const methods = requests.map((m) => m.method);
  if (methods.includes('initialize')) return '2025';
  const modern = requests.filter((m) => m.params?._meta?.['io.modelcontextprotocol/protocolVersion'] === '2026-07-28');
  return modern.length > 0 && modern.length === requests.filter((m) => m.id !== undefined).length ? '2026-07-28' : `unclear: ${methods}`;
}

async function startGateway() {
  const port = await freePort();
  const env = serverEnv({ SKILLS_DIR: join(REPO, 'skills') });
  // The server sees the suite's requests through tee, so each test can say which era ran.
  requestLog = join(out, 'requests.jsonl');
  const wrapper = join(out, 'server.sh');
  writeFileSync(wrapper, `#!/bin/sh\ntee -a ${shellQuote(requestLog)} | exec ${shellQuote(BIN)}\n`);
  chmodSync(wrapper, 0o755);
  const child = spawn(NODE22, [SUPERGATEWAY, '--stdio', wrapper, '--outputTransport', 'streamableHttp', '--port', String(port)], {
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

/**
 * Runs one scenario; its checks, from the results the suite writes. `force` runs it at a
 * spec version the suite does not list for it.
 */
function scenario(name, specVersion, { force = false } = {}) {
  const dir = mkdtempSync(join(out, `${name}-`));
  const args = [CONFORMANCE, 'server', '--url', url, '--scenario', name, '-o', dir];
  if (specVersion) args.push('--spec-version', specVersion);
  if (force) args.push('--force');
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

  // An extension scenario is on no spec version's list, so naming one needs --force; run
  // without one it speaks the suite's default for extensions, 2026-07-28. Each run is
  // checked for the era it actually spoke.
  const sep2640 = ['sep-2640-skills-enumeration', 'sep-2640-skills-directory', 'sep-2640-skills-manifest'];
  const runs = [
    ['the default spec version', undefined, '2026-07-28'],
    ['--spec-version 2026-07-28 --force', '2026-07-28', '2026-07-28'],
    ['--spec-version 2025-11-25 --force', '2025-11-25', '2025'],
  ];
  for (const [how, specVersion, era] of runs) {
    for (const name of sep2640) {
      test(`${name} (${how}): no failure, spoken in ${era}`, async () => {
        takeRequests();
        const checks = await scenario(name, specVersion, { force: specVersion !== undefined });
        assert.ok(checks.length > 1, 'checks ran');
        assert.deepEqual(failures(checks), []);
        assert.equal(eraOf(takeRequests()), era);
      });
    }
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
