// When a confirmation is spent (docs/wire.md §6 and §8): only an approval that starts a run
// is recorded. A declined input_required round records nothing in the host-wide spent
// record (MCP_CONFIRM_SECRET), so declines cannot fill it; and a run the run side refuses
// to start (here: the one run uid of SKILL_MCP_RUN_UIDS held by another broker's run)
// leaves the confirmToken or round state valid, so the same retry runs once the uid is free.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshDir, MARK_JS, removeDir, skillMd } from './fixtures.mjs';
import { sleep, spawnRaw } from './lib.mjs';

const REV = '2026-07-28';
const SECRET = 'round-spend-test-secret-5c1e';
const SERVICE_UID = 64101;  // the broker's service identity, as in run_identity.test.mjs
const RUN_AS_UID = 64100;
const ONE_UID = '1879100777-1879100777';
const isRoot = process.getuid() === 0;

// Writes its pid to argv[2], then waits until the file argv[3] exists.
const HOLD_JS = `'use strict';
const fs = require('node:fs');
const [pidFile, release] = process.argv.slice(2);
fs.writeFileSync(pidFile, String(process.pid));
const t = setInterval(() => { if (fs.existsSync(release)) { clearInterval(t); } }, 50);
`;

let base, skills, markers, seq = 0, ids = 0;
before(() => {
  base = freshDir('skill-mcp-spend-');
  skills = join(base, 'skills');
  markers = join(base, 'markers');
  mkdirSync(markers);
  chmodSync(markers, 0o1777);  // runs may use another uid
  const dir = join(skills, 'spend');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  chmodSync(skills, 0o755);
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: spend\ndescription: Marks and holds.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/mark.js\n      interpreter: node\n      timeout: 10\n' +
    '    - script: scripts/hold.js\n      interpreter: node\n      timeout: 60\n', '\n# Spend\n'));
  writeFileSync(join(dir, 'scripts', 'mark.js'), MARK_JS);
  writeFileSync(join(dir, 'scripts', 'hold.js'), HOLD_JS);
});
after(() => removeDir(base));

const marker = (what) => join(markers, `${what}-${++seq}`);
const runs = (path) => (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0);

/** A fresh state directory (0700), owned by `uid`. */
function stateDir(uid) {
  const dir = join(base, `state-${++seq}`);
  mkdirSync(dir, { mode: 0o700 });
  if (uid !== undefined) chownSync(dir, uid, uid);
  return dir;
}

function runArgs(script, args, confirmToken) {
  const a = { name: 'spend', script: `scripts/${script}`, args };
  if (confirmToken !== undefined) a.confirmToken = confirmToken;
  return a;
}

async function call(raw, params) {
  ids += 1;
  const answer = await raw.request({ jsonrpc: '2.0', id: ids, method: 'tools/call', params }, 30000);
  assert.equal(answer.id, ids, JSON.stringify(answer));
  assert.ok(answer.result, JSON.stringify(answer));
  const content = answer.result.content;  // an input_required result has none
  return { result: answer.result, json: content ? JSON.parse(content[0].text) : null };
}

/** A 2026-07-28 skill_run from a client offering elicitation. */
function round(raw, args, extra = {}) {
  return call(raw, {
    name: 'skill_run', arguments: args, ...extra,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': REV,
      'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
    },
  });
}

const accept = { confirm: { action: 'accept', content: { approve: true } } };
const decline = { confirm: { action: 'decline' } };

async function waitFor(path, ms = 30000) {
  const end = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${path}`);
    await sleep(50);
  }
}

test('declines record nothing in the host-wide spent record; the approval then runs once', async () => {
  // A root broker drops to its service user, which must own the state directory.
  const ids = isRoot ? { SKILL_MCP_USER: String(SERVICE_UID), SKILL_MCP_RUN_AS: String(RUN_AS_UID) } : {};
  const state = stateDir(isRoot ? SERVICE_UID : undefined);
  const raw = spawnRaw({ SKILLS_DIR: skills, SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_RUN_UIDS: 'off',
                         MCP_CONFIRM_SECRET: SECRET, SKILL_MCP_STATE_DIR: state, ...ids });
  try {
    const mark = marker('declined');
    const args = runArgs('mark.js', [mark]);
    const first = (await round(raw, args)).result;
    assert.equal(first.resultType, 'input_required', JSON.stringify(first));
    const records = join(state, 'spent-tokens');
    for (let i = 0; i < 20; i++) {
      const { result, json } = await round(raw, args, { requestState: first.requestState, inputResponses: decline });
      assert.notEqual(result.isError, true, JSON.stringify(json));
      assert.equal(json.cancelled, true, JSON.stringify(json));
    }
    assert.deepEqual(readdirSync(records), [], 'a decline records nothing');
    assert.equal(runs(mark), 0);
    const { json } = await round(raw, args, { requestState: first.requestState, inputResponses: accept });
    assert.equal(json.exitCode, 0, JSON.stringify(json));
    assert.equal(runs(mark), 1);
    assert.equal(readdirSync(records).length, 1, 'the approval that ran is recorded');
    const again = await round(raw, args, { requestState: first.requestState, inputResponses: accept });
    assert.equal(again.json.error, 'TOKEN_REUSED', JSON.stringify(again.json));
    assert.equal(runs(mark), 1);
  } finally {
    await raw.end();
  }
});

describe('a run that cannot start leaves the approval unspent', () => {
  test('the one run uid held by another broker: RUN_NOT_STARTED, then the same token and state run', async (t) => {
    if (!isRoot) return t.skip('needs root: only a broker that can switch uids allocates run uids');
    const env = {
      SKILLS_DIR: skills, SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_RUN_UIDS: ONE_UID,
      SKILL_MCP_USER: String(SERVICE_UID), SKILL_MCP_RUN_AS: String(RUN_AS_UID),
      MCP_CONFIRM_SECRET: SECRET, SKILL_MCP_STATE_DIR: stateDir(SERVICE_UID),
    };
    const holder = spawnRaw(env), classic = spawnRaw(env), rev = spawnRaw(env);
    try {
      // The holder's run takes the only uid and keeps it until `release` exists.
      await holder.initialize();
      const pidFile = marker('pid'), release = marker('release');
      const holdArgs = runArgs('hold.js', [pidFile, release]);
      const preview = await call(holder, { name: 'skill_run', arguments: holdArgs });
      holder.send({ jsonrpc: '2.0', id: 'hold', method: 'tools/call',
                    params: { name: 'skill_run', arguments: { ...holdArgs, confirmToken: preview.json.confirmToken } } });
      await waitFor(pidFile);

      // 2025: a confirmToken.
      await classic.initialize();
      const m1 = marker('classic');
      const token = (await call(classic, { name: 'skill_run', arguments: runArgs('mark.js', [m1]) })).json.confirmToken;
      assert.ok(token);
      const refused = await call(classic, { name: 'skill_run', arguments: runArgs('mark.js', [m1], token) });
      assert.equal(refused.result.isError, true);
      assert.equal(refused.json.error, 'RUN_NOT_STARTED', JSON.stringify(refused.json));
      // 2026: an accepted round.
      const m2 = marker('rev');
      const first = (await round(rev, runArgs('mark.js', [m2]))).result;
      assert.equal(first.resultType, 'input_required', JSON.stringify(first));
      const refused2 = await round(rev, runArgs('mark.js', [m2]), { requestState: first.requestState, inputResponses: accept });
      assert.equal(refused2.json.error, 'RUN_NOT_STARTED', JSON.stringify(refused2.json));
      assert.equal(runs(m1) + runs(m2), 0);

      // The holder's run ends. Its uid goes back before the answer where nothing of the run
      // is left, else once its worker, still exiting when the run's end was reported, is
      // reaped: just after the answer (docs/isolation.md). Until then the same token is
      // refused again, and stays unspent.
      writeFileSync(release, '');
      const held = await holder.next(60000);
      assert.equal(held.id, 'hold');
      assert.equal(JSON.parse(held.result.content[0].text).exitCode, 0, JSON.stringify(held));

      // The same goes for each run after it: the classic run's uid comes back just after
      // its answer too.
      const whenStarted = async (again, mark) => {
        let ran;
        for (let i = 0; i < 100; i++) {
          ran = await again();
          if (ran.json.error !== 'RUN_NOT_STARTED') break;
          assert.equal(runs(mark), 0);
          await sleep(50);
        }
        return ran;
      };
      const ran = await whenStarted(
        () => call(classic, { name: 'skill_run', arguments: runArgs('mark.js', [m1], token) }), m1);
      assert.equal(ran.json.exitCode, 0, JSON.stringify(ran.json));
      assert.equal(runs(m1), 1);
      const reused = await call(classic, { name: 'skill_run', arguments: runArgs('mark.js', [m1], token) });
      assert.equal(reused.json.error, 'TOKEN_REUSED', JSON.stringify(reused.json));
      const ran2 = await whenStarted(
        () => round(rev, runArgs('mark.js', [m2]), { requestState: first.requestState, inputResponses: accept }), m2);
      assert.equal(ran2.json.exitCode, 0, JSON.stringify(ran2.json));
      assert.equal(runs(m2), 1);
    } finally {
      await Promise.all([holder.end(), classic.end(), rev.end()]);
    }
  });
});
