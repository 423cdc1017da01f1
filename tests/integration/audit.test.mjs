// The audit trail on stderr (docs/audit.md): the real broker, its stderr captured, one
// marked record per skill_run outcome with its fields, and neither a variable's value nor
// a script's output anywhere in stderr. SKILL_MCP_AUDIT=stderr, so a host with a journal
// still writes these records where the test reads them.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { spawnSync } from 'node:child_process';

import { BIN, callJson, connect, serverEnv, sleep } from './lib.mjs';

const MARK = '{"skill_mcp_audit":1,';
const SECRET = 'audit-secret-value-7f3a';
const OUTPUT = 'audit-output-marker-91c2';

// Prints the marker and the variable's length (never the value), exits 3.
const OK_JS = `process.stdout.write('${OUTPUT}\\n' + String(process.env.API_KEY).length);\nprocess.exit(3);\n`;
const SLOW_JS = 'setInterval(() => {}, 1000);\n';
// Forks 6 children of 100 MiB each and holds them (run_memory.test.mjs's hog, shorter).
const HOG_JS = `'use strict';
const { spawn } = require('node:child_process');
const CHILD = "const b = Buffer.alloc(100 * 1048576, 1); setInterval(() => b[0]++, 1000);";
for (let i = 0; i < 6; i++) spawn(process.execPath, ['-e', CHILD], { stdio: 'ignore' });
setInterval(() => {}, 1000);
`;

let root;
let okSha;
before(() => {
  root = freshDir('skill-mcp-audit-');
  const dir = join(root, 'audited');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: audited\ndescription: Scripts whose runs leave audit records.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/ok.js\n      interpreter: node\n      env: [API_KEY]\n      timeout: 30\n' +
    '    - script: scripts/slow.js\n      interpreter: node\n      timeout: 1\n' +
    '    - script: scripts/hog.js\n      interpreter: node\n      timeout: 60\n', '\n# Audited\n'));
  writeFileSync(join(dir, 'scripts', 'ok.js'), OK_JS);
  writeFileSync(join(dir, 'scripts', 'slow.js'), SLOW_JS);
  writeFileSync(join(dir, 'scripts', 'hog.js'), HOG_JS);
  okSha = createHash('sha256').update(readFileSync(join(dir, 'scripts', 'ok.js'))).digest('hex');
});
after(() => removeDir(root));

function records(stderr) {
  return stderr.split('\n').filter((l) => l.startsWith(MARK)).map((l) => JSON.parse(l));
}

// Waits until `n` records are on stderr (each is written when its outcome is known).
async function waitRecords(s, n) {
  for (let i = 0; i < 200 && records(s.stderr()).length < n; i++) await sleep(25);
  return records(s.stderr());
}

function open(env = {}, options = {}) {
  return connect({
    env: { SKILLS_DIR: root, SKILL_MCP_AUDIT: 'stderr', API_KEY: SECRET, ...env },
    ...options,
  });
}

async function tokenRun(client, call) {
  const first = await callJson(client, 'skill_run', call);
  assert.ok(first.json?.confirmToken, first.text);
  const second = await callJson(client, 'skill_run', { ...call, confirmToken: first.json.confirmToken });
  return { token: first.json.confirmToken, second };
}

function assertNoSecretNorOutput(stderr) {
  assert.ok(!stderr.includes(SECRET), 'a variable value reached stderr');
  assert.ok(!stderr.includes(OUTPUT), "the script's output reached stderr");
}

describe('audit records on stderr', () => {
  test('ran, refused, reused token, timed out: one record each, with their fields', async () => {
    const s = await open({ MCP_CONFIRM_MODE: 'auto' });
    try {
      const refused = await callJson(s.client, 'skill_run', { name: 'audited', script: 'scripts/none.js' });
      assert.equal(refused.isError, true);
      const weird = 'a\u202eb';
      const { token, second } = await tokenRun(s.client, { name: 'audited', script: 'scripts/ok.js', args: [weird, 'x'.repeat(300)] });
      assert.equal(second.json?.exitCode, 3, second.text);
      const reused = await callJson(s.client, 'skill_run', { name: 'audited', script: 'scripts/ok.js', args: [weird, 'x'.repeat(300)], confirmToken: token });
      assert.equal(reused.json?.error, 'TOKEN_REUSED', reused.text);
      const slow = await tokenRun(s.client, { name: 'audited', script: 'scripts/slow.js' });
      assert.equal(slow.second.json?.timedOut, true, slow.second.text);

      const got = await waitRecords(s, 4);
      // The previews (a token handed out) are a step, not an outcome: no record.
      assert.deepEqual(got.map((r) => r.SKILL_MCP_OUTCOME), ['refused', 'ran', 'refused', 'timed-out'], s.stderr());
      const [no, ran, again, late] = got;

      for (const r of got) {
        assert.equal(r.SYSLOG_IDENTIFIER, 'skill-mcp');
        assert.match(r.MESSAGE_ID, /^[0-9a-f]{32}$/);
        // The SDK's stdio transport is a socket pair: its peer is this process.
        assert.equal(r.SKILL_MCP_PEER_FROM, 'socket');
        assert.equal(r.SKILL_MCP_PEER_PID, String(process.pid));
        assert.equal(r.SKILL_MCP_PEER_UID, String(process.getuid()));
        assert.equal(r.SKILL_MCP_PEER_GID, String(process.getgid()));
        assert.equal(r.SKILL_MCP_CLIENT_NAME, 'skill-mcp-integration');
        assert.equal(r.SKILL_MCP_CLIENT_VERSION, '0.0.1');
        assert.equal(r.SKILL_MCP_SKILL, 'audited');
        assert.equal(r.SKILL_MCP_CONFIRM_MODE, 'auto');
        assert.equal(r.SKILL_MCP_AUDIT_LOST, '0');
      }
      assert.equal(no.SKILL_MCP_REFUSAL, 'SCRIPT_NOT_DECLARED');
      assert.equal(no.SKILL_MCP_SCRIPT, 'scripts/none.js');
      assert.equal(no.SKILL_MCP_ARGV, undefined, 'nothing of a run that was never prepared');
      assert.notEqual(no.MESSAGE_ID, ran.MESSAGE_ID);

      assert.equal(ran.SKILL_MCP_SCRIPT, 'scripts/ok.js');
      assert.equal(ran.SKILL_MCP_SCRIPT_SHA256, okSha);
      assert.equal(ran.SKILL_MCP_INTERPRETER, 'node');
      assert.match(ran.SKILL_MCP_INTERPRETER_PATH, /^\//);
      const argv = JSON.parse(ran.SKILL_MCP_ARGV);
      assert.equal(argv.length, 3);
      assert.equal(argv[0], 'scripts/ok.js');
      assert.equal(argv[1], 'a\\u202eb', 'shown as the preview shows it');
      assert.match(argv[2], /^x{200} … \[cut: 300 characters, 300 bytes in all\]$/);
      // The names the receipt lists (the granted one and the baseline), never a value.
      assert.deepEqual(JSON.parse(ran.SKILL_MCP_ENV_NAMES), second.json.env);
      assert.ok(second.json.env.includes('API_KEY'));
      assert.equal(ran.SKILL_MCP_CONFIRM, 'token');
      assert.match(ran.SKILL_MCP_CONFIRM_WAIT_MS, /^\d+$/);
      assert.match(ran.SKILL_MCP_RUN_UID, /^\d+$/);
      assert.ok(JSON.parse(ran.SKILL_MCP_LAYERS).length > 0, ran.SKILL_MCP_LAYERS);
      assert.equal(ran.SKILL_MCP_EXIT_CODE, '3');
      assert.equal(ran.SKILL_MCP_SIGNAL, undefined);
      assert.match(ran.SKILL_MCP_DURATION_MS, /^\d+$/);
      assert.equal(ran.SKILL_MCP_STDOUT_BYTES, String(second.json.stdout.length));
      assert.equal(ran.SKILL_MCP_STDERR_BYTES, '0');
      assert.equal(ran.SKILL_MCP_TIMEOUT_MS, '30000');

      assert.equal(again.SKILL_MCP_REFUSAL, 'TOKEN_REUSED');
      assert.equal(again.SKILL_MCP_SCRIPT_SHA256, okSha);

      assert.equal(late.SKILL_MCP_SCRIPT, 'scripts/slow.js');
      assert.match(late.SKILL_MCP_SIGNAL, /^SIG(TERM|KILL)$/);
      assert.equal(late.SKILL_MCP_TIMEOUT_MS, '1000');
      assertNoSecretNorOutput(s.stderr());
    } finally {
      await s.close();
    }
  });

  test('declined, then approved through the prompt: one record each', async () => {
    let asked = 0;
    const s = await open({}, {
      onElicit: async () => (++asked === 1 ? { action: 'decline' } : { action: 'accept', content: { approve: true } }),
    });
    try {
      const no = await callJson(s.client, 'skill_run', { name: 'audited', script: 'scripts/ok.js' });
      assert.equal(no.json?.cancelled, true, no.text);
      const yes = await callJson(s.client, 'skill_run', { name: 'audited', script: 'scripts/ok.js' });
      assert.equal(yes.json?.exitCode, 3, yes.text);
      const got = await waitRecords(s, 2);
      assert.deepEqual(got.map((r) => r.SKILL_MCP_OUTCOME), ['declined', 'ran'], s.stderr());
      assert.equal(got[0].SKILL_MCP_CONFIRM, undefined);
      assert.equal(got[0].SKILL_MCP_SCRIPT_SHA256, okSha);
      assert.equal(got[1].SKILL_MCP_CONFIRM, 'elicitation');
      assert.equal(got[1].SKILL_MCP_CONFIRM_MODE, 'ask-user');
      assert.match(got[1].SKILL_MCP_CONFIRM_WAIT_MS, /^\d+$/);
      assertNoSecretNorOutput(s.stderr());
    } finally {
      await s.close();
    }
  });

  test('a run killed for its memory: one memory-killed record with its peak', async () => {
    const s = await open({ MCP_CONFIRM_MODE: 'auto', SKILL_MCP_LIMIT_RUN_MEMORY_MB: '256' });
    try {
      const { second } = await tokenRun(s.client, { name: 'audited', script: 'scripts/hog.js' });
      assert.equal(second.json?.signal, 'SIGKILL', second.text);
      const got = await waitRecords(s, 1);
      assert.equal(got.length, 1, s.stderr());
      assert.equal(got[0].SKILL_MCP_OUTCOME, 'memory-killed');
      assert.equal(got[0].SKILL_MCP_SIGNAL, 'SIGKILL');
      assert.ok(Number(got[0].SKILL_MCP_PEAK_MEMORY_BYTES) > 256 * 1048576, got[0].SKILL_MCP_PEAK_MEMORY_BYTES);
    } finally {
      await s.close();
    }
  });

  test('mode refuse: the refusal is recorded though it is not an error answer', async () => {
    const s = await open({ MCP_CONFIRM_MODE: 'refuse' });
    try {
      const r = await callJson(s.client, 'skill_run', { name: 'audited', script: 'scripts/ok.js' });
      assert.notEqual(r.isError, true, r.text);
      const got = await waitRecords(s, 1);
      assert.equal(got.length, 1, s.stderr());
      assert.equal(got[0].SKILL_MCP_OUTCOME, 'refused');
      assert.equal(got[0].SKILL_MCP_CONFIRM_MODE, 'refuse');
      assert.equal(got[0].SKILL_MCP_REFUSAL, 'confirmation-unsupported');
    } finally {
      await s.close();
    }
  });

  test('doctor says where the records go', () => {
    const out = spawnSync(BIN, ['doctor'], { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_AUDIT: 'stderr' }), encoding: 'utf8' });
    assert.match(out.stdout, /\naudit: stderr\n {4}one JSON line per skill_run outcome, starting \{"skill_mcp_audit":1,\n/, out.stdout);
    const none = spawnSync(BIN, ['doctor'], {
      env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_AUDIT: 'journal' }), encoding: 'utf8' });
    // Where this host has no journal, demanding one is an error doctor names.
    if (!/audit: journal/.test(none.stdout)) {
      assert.notEqual(none.status, 0);
      assert.match(none.stdout, /audit: off\n {4}SKILL_MCP_AUDIT=journal, but the journal's socket \/run\/systemd\/journal\/socket takes no connection/);
    }
  });

  test('a setting the broker does not know stops it', async () => {
    await assert.rejects(open({ SKILL_MCP_AUDIT: 'syslog' }), /SKILL_MCP_AUDIT="syslog" is not auto, journal or stderr/);
  });
});
