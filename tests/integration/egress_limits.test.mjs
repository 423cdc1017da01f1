// The declared network mode's bounds (docs/isolation.md, "Declared egress"): a run is held
// to at most 64 hosts and 16 ports a host. A skill whose allowlist would be larger is
// refused at its preview, before any token or prompt, with RUNS_BLOCKED and what to do,
// never after the user approved it. Each refusal has its control at the bound, confirmed
// and run, so the bound is the one the run description really carries. The built broker
// through the SDK client; the listing stays the reference's.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { callJson, confirmedRun, connect } from './lib.mjs';

const MAX_HOSTS = 64;
const MAX_PORTS = 16;
const hosts = (n) => Array.from({ length: n }, (_, i) => `h${i}.example.test`);
// One SKILL_MCP_EGRESS_ALLOW pattern per port, all for the one host `api` declares.
const API = 'api.example.test';
const portPatterns = (n) => Array.from({ length: n }, (_, i) => `${API}:${8001 + i}`).join(',');

let root;

function writeSkill(name, egress) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  const frontmatter = [
    `name: ${name}`,
    `description: Declares ${egress.length} host(s).`,
    'mcp-host:',
    '  version: 1',
    '  run:',
    '    - script: scripts/hello.js',
    '      interpreter: node',
    `  egress: [${egress.join(', ')}]`,
  ].join('\n');
  writeFileSync(join(dir, 'SKILL.md'), skillMd(frontmatter, '\nRun scripts/hello.js.\n'));
  writeFileSync(join(dir, 'scripts', 'hello.js'), "console.log('ran');\n");
}

before(() => {
  root = freshDir('skill-mcp-egress-limits-');
  writeSkill('too-many', hosts(MAX_HOSTS + 1));
  writeSkill('most', hosts(MAX_HOSTS));
  writeSkill('api', [API]);
});

after(() => {
  if (root) removeDir(root);
});

const env = (extra = {}) => ({ SKILLS_DIR: root, SKILL_MCP_NETWORK: 'declared', ...extra });
const call = (name) => ({ name, script: 'scripts/hello.js', args: [] });

async function withClient(options, fn) {
  const conn = await connect(options);
  try {
    return await fn(conn.client, conn);
  } finally {
    await conn.close();
  }
}

/** The refusal at the preview: RUNS_BLOCKED, naming the bound and both ways out. */
function assertRefused(answer, bound) {
  assert.equal(answer.isError, true, answer.text);
  assert.equal(answer.json?.error, 'RUNS_BLOCKED', answer.text);
  assert.equal(Object.hasOwn(answer.json, 'confirmToken'), false, answer.text);
  assert.equal(Object.hasOwn(answer.json, 'preview'), false, answer.text);
  const { message } = answer.json;
  assert.match(message, bound, message);
  assert.match(message, /narrow them with SKILL_MCP_EGRESS_ALLOW/, message);
  assert.match(message, /SKILL_MCP_NETWORK=on/, message);
}

/** The control: previewed with the whole list, then confirmed and run. */
async function assertRuns(client, name, check) {
  const first = await callJson(client, 'skill_run', call(name));
  assert.equal(first.json?.status, 'confirmation-required', first.text);
  check(first.json.preview.willRun.egress);
  const done = await callJson(client, 'skill_run', { ...call(name), confirmToken: first.json.confirmToken });
  assert.equal(done.isError, false, done.text);
  assert.equal(done.json.exitCode, 0, done.text);
  assert.equal(done.json.stdout, 'ran\n', done.text);
}

describe('declared egress past what a run can be held to', () => {
  test('65 declared hosts are refused at the preview; 64 are previewed and run', async () => {
    await withClient({ env: env() }, async (client) => {
      assertRefused(await callJson(client, 'skill_run', call('too-many')),
        /would be allowed 65 hosts .*more than the 64 a run can be held to/);
      await assertRuns(client, 'most', (egress) => {
        assert.equal(egress.length, MAX_HOSTS, JSON.stringify(egress));
        assert.deepEqual(egress.at(-1), { host: `h${MAX_HOSTS - 1}.example.test`, ports: [80, 443] });
      });
    });
  });

  test('a client that elicits is never asked about 65 hosts; it is asked about 64', async () => {
    const prompts = [];
    const onElicit = async (req) => {
      prompts.push(req.params.message);
      return { action: 'decline' };
    };
    await withClient({ env: env(), onElicit }, async (client) => {
      assertRefused(await callJson(client, 'skill_run', call('too-many')), /65 hosts/);
      assert.equal(prompts.length, 0, 'no prompt for a run that cannot be held to its list');
      const declined = await callJson(client, 'skill_run', call('most'));
      assert.equal(declined.json?.cancelled, true, declined.text);
      assert.equal(prompts.length, 1);
      assert.ok(prompts[0].includes(`h${MAX_HOSTS - 1}.example.test`), prompts[0]);
    });
  });

  test('SKILL_MCP_EGRESS_ALLOW narrowing 65 declared hosts to 64 lets the run through', async () => {
    const allow = hosts(MAX_HOSTS).join(',');
    await withClient({ env: env({ SKILL_MCP_EGRESS_ALLOW: allow }) }, async (client) => {
      await assertRuns(client, 'too-many', (egress) => assert.equal(egress.length, MAX_HOSTS));
    });
  });

  test('17 ports for one host are refused at the preview; 16 are previewed and run', async () => {
    await withClient({ env: env({ SKILL_MCP_EGRESS_ALLOW: portPatterns(MAX_PORTS + 1) }) }, async (client) => {
      assertRefused(await callJson(client, 'skill_run', call('api')),
        new RegExp(`gives the run 17 ports of "${API}", more than the 16 a run can be held to for one host`));
    });
    await withClient({ env: env({ SKILL_MCP_EGRESS_ALLOW: portPatterns(MAX_PORTS) }) }, async (client) => {
      await assertRuns(client, 'api', (egress) => {
        assert.equal(egress.length, 1, JSON.stringify(egress));
        assert.equal(egress[0].ports.length, MAX_PORTS, JSON.stringify(egress));
      });
    });
  });

  test('the network on: the same skill is previewed and runs (the bound is the declared mode\'s)', async () => {
    await withClient({ env: env({ SKILL_MCP_NETWORK: 'on' }) }, async (client) => {
      const done = await confirmedRun(client, call('too-many'));
      assert.equal(done.json?.exitCode, 0, done.text);
    });
  });

  test('skill_list stays the reference\'s: every declared host, no problem of this server\'s own', async () => {
    await withClient({ env: env() }, async (client) => {
      const list = (await callJson(client, 'skill_list')).json;
      const skill = list.skills.find((s) => s.name === 'too-many');
      assert.deepEqual(skill.declaredEgress, hosts(MAX_HOSTS + 1));
      assert.deepEqual(skill.scripts.map((s) => s.script), ['scripts/hello.js']);
      assert.deepEqual(list.problems, [], JSON.stringify(list.problems));
    });
  });
});
