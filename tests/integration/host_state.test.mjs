// The host-wide state directory of a root stdio broker (docs/isolation.md,
// "Own identity per run"): started as root with neither SKILL_MCP_STATE_DIR nor the
// unit's $STATE_DIRECTORY, the broker makes /var/lib/skill-mcp (the unit's
// StateDirectory=) for its service user before it drops root, and takes every run's own
// uid there, so root stdio brokers and the unit's brokers share one pool.
//
// The host's /var/lib is never touched: every broker here runs in a mount namespace of
// its own (unshare) with one test directory bound over /var/lib, the same one for
// brokers that must share it. A broker run from its build tree leaves the host default
// alone (broker/cli/boot.cc), so the tests run a copy of the built binary from outside it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, rpcOver, serverEnv, sleep } from './lib.mjs';

const SERVICE_UID = 64101;
const RUN_AS_UID = 64100;
const RANGE = [1879048192, 1879113727];
const isRoot = process.getuid() === 0;

const HOLD_JS = `'use strict';
require('node:fs').writeFileSync(process.argv[2], JSON.stringify({ uid: process.getuid(), gid: process.getgid() }));
setInterval(() => {}, 1000);
`;

let root, markers, runtime, copyDir, copy, canUnshare;
before(() => {
  root = freshDir('skill-mcp-hoststate-');
  const dir = join(root, 'hold');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: hold\ndescription: Holds a run open.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/hold.js\n      interpreter: node\n      timeout: 60\n', '\n# Hold\n'));
  writeFileSync(join(dir, 'scripts', 'hold.js'), HOLD_JS);
  // The runs write their markers in MCP_DATA_DIR, the one place outside its scratch
  // directory a namespaced run may write (docs/isolation.md, "Doors out of the cell").
  markers = mkdtempSync('/var/tmp/skill-mcp-hoststate-markers-');
  chmodSync(markers, 0o1777);
  runtime = mkdtempSync('/var/tmp/skill-mcp-hoststate-runtime-');
  // The binary outside its build tree, as an installed one (root's, 0755).
  copyDir = mkdtempSync('/var/tmp/skill-mcp-hoststate-bin-');
  chmodSync(copyDir, 0o755);
  copy = join(copyDir, 'skill-mcp');
  copyFileSync(BIN, copy);
  chmodSync(copy, 0o755);
  canUnshare = isRoot && spawnSync('unshare', ['--mount', '--propagation', 'private', '--', 'true']).status === 0;
});
after(() => { removeDir(root); removeDir(markers); removeDir(runtime); removeDir(copyDir); });

// A fresh directory to bind over /var/lib: root's, 0755, as the host's.
function fakeVarLib() {
  const d = mkdtempSync('/var/tmp/skill-mcp-hoststate-varlib-');
  chmodSync(d, 0o755);
  return d;
}

function skip(t) {
  if (!isRoot) return t.skip('needs root: only a root-started broker uses the host-wide default'), true;
  if (!canUnshare) return t.skip('needs a private mount namespace (unshare --mount) to keep the host /var/lib untouched'), true;
  return false;
}

// argv running `exe args...` (optionally as `user` through setpriv) with `varLib` bound
// over /var/lib in a mount namespace of its own.
function wrapped(varLib, exe, args, { asNobody = false } = {}) {
  const drop = asNobody ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c',
    'mount --bind "$0" /var/lib && exec "$@"', varLib, ...drop, exe, ...args];
}

function env(extra = {}) {
  // No SKILL_MCP_STATE_DIR, no STATE_DIRECTORY; an XDG_RUNTIME_DIR that must lose.
  // MCP_DATA_DIR makes the broker hosted: the owner's grant names the script.
  return serverEnv({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_USER: String(SERVICE_UID),
                     SKILL_MCP_RUN_AS: String(RUN_AS_UID), XDG_RUNTIME_DIR: runtime,
                     MCP_DATA_DIR: markers,
                     MCP_SKILL_RUN: JSON.stringify([{ skill: 'hold', script: 'scripts/hold.js' }]),
                     ...extra });
}

function doctor(varLib, { exe = copy, asNobody = false, extra = {} } = {}) {
  const argv = wrapped(varLib, exe, ['doctor'], { asNobody });
  return spawnSync(argv[0], argv.slice(1), { env: env(extra), encoding: 'utf8' });
}

describe('a root stdio broker without a state directory', () => {
  test('makes the unit\'s /var/lib/skill-mcp for its service user and takes run uids there', (t) => {
    if (skip(t)) return;
    const varLib = fakeVarLib();
    try {
      const d = doctor(varLib, { extra: { MCP_CONFIRM_SECRET: 'a'.repeat(64) } });
      assert.match(d.stdout, /run-identity: on\n\s+each run gets a uid of its own from 1879048192-1879113727 \(65536 uids, \d+ free now; locks in \/var\/lib\/skill-mcp\/run-uids\)/, d.stdout + d.stderr);
      // One spent-token record with the unit's brokers too.
      assert.ok(d.stdout.includes('/var/lib/skill-mcp/spent-tokens'), d.stdout);
      const st = statSync(join(varLib, 'skill-mcp'));
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [SERVICE_UID, SERVICE_UID, 0o700]);
      assert.ok(existsSync(join(varLib, 'skill-mcp', 'run-uids')));
      // Nothing of it went to the per-login directory.
      assert.equal(existsSync(join(runtime, 'skill-mcp')), false);
    } finally {
      removeDir(varLib);
    }
  });

  test('refuses a /var/lib/skill-mcp of another owner or mode and leaves the layer off', (t) => {
    if (skip(t)) return;
    const varLib = fakeVarLib();
    try {
      const mine = join(varLib, 'skill-mcp');
      mkdirSync(mine, { mode: 0o700 });
      chownSync(mine, 64103, 64103);
      const d = doctor(varLib);
      assert.match(d.stdout, /run-identity: off\n\s+the uid locks need the host-wide state directory \(the host-wide state directory is refused: \/var\/lib\/skill-mcp belongs to uid 64103 with mode 0700, not to the service uid 64101 with mode 0700/, d.stdout);
      assert.equal(statSync(mine).uid, 64103, 'nothing was repaired');
      chownSync(mine, SERVICE_UID, SERVICE_UID);
      chmodSync(varLib, 0o775);  // a /var/lib others may write: nothing is trusted there
      const open = doctor(varLib);
      assert.match(open.stdout, /run-identity: off\n\s+the uid locks need the host-wide state directory \(the host-wide state directory is refused: \/var\/lib can be written by others than root/, open.stdout);
    } finally {
      removeDir(varLib);
    }
  });

  test('a broker run from its build tree leaves the host default alone', (t) => {
    if (skip(t)) return;
    const varLib = fakeVarLib();
    try {
      const d = doctor(varLib, { exe: BIN });
      assert.match(d.stdout, /run-identity: off\n\s+the uid locks need the host-wide state directory \(a broker run from its build tree does not use the host-wide \/var\/lib\/skill-mcp; set SKILL_MCP_STATE_DIR\)/, d.stdout);
      assert.equal(existsSync(join(varLib, 'skill-mcp')), false);
    } finally {
      removeDir(varLib);
    }
  });

  test('an unprivileged broker makes nothing there (unchanged: its runtime directory)', (t) => {
    if (skip(t)) return;
    const varLib = fakeVarLib();
    try {
      const d = doctor(varLib, { asNobody: true });
      assert.match(d.stdout, /run-identity: off\n\s+the broker cannot switch uids/, d.stdout + d.stderr);
      assert.equal(existsSync(join(varLib, 'skill-mcp')), false);
    } finally {
      removeDir(varLib);
    }
  });
});

function startBroker(varLib) {
  const argv = wrapped(varLib, copy, []);
  const child = spawn(argv[0], argv.slice(1), { env: env(), stdio: ['pipe', 'pipe', 'pipe'] });
  const { send, answer } = rpcOver(child, 30000);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return {
    async init() {
      await answer(send('initialize', { protocolVersion: '2025-06-18', capabilities: {},
                                        clientInfo: { name: 'hoststate', version: '1' } }));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    },
    async start(where) {
      const a = { name: 'hold', script: 'scripts/hold.js', args: [where] };
      const first = await answer(send('tools/call', { name: 'skill_run', arguments: a }));
      const token = JSON.parse(first.result.content[0].text).confirmToken;
      assert.ok(token, JSON.stringify(first));
      send('tools/call', { name: 'skill_run', arguments: { ...a, confirmToken: token } });
    },
    async close() {
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function waitForFile(path, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (existsSync(path)) {
      try { return JSON.parse(readFileSync(path, 'utf8')); } catch { /* half written */ }
    }
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${path}`);
}

describe('two root stdio brokers without a state directory', () => {
  test('share the host-wide pool: their concurrent runs get different uids of the range', async (t) => {
    if (skip(t)) return;
    const varLib = fakeVarLib();
    const a = startBroker(varLib), b = startBroker(varLib);
    try {
      await Promise.all([a.init(), b.init()]);
      const wa = join(markers, `a-${process.pid}`), wb = join(markers, `b-${process.pid}`);
      await a.start(wa);
      const first = await waitForFile(wa);
      await b.start(wb);
      const second = await waitForFile(wb);
      for (const r of [first, second]) {
        assert.ok(r.uid >= RANGE[0] && r.uid <= RANGE[1], `uid ${r.uid} in the run range`);
        assert.equal(r.gid, RUN_AS_UID, 'every run keeps the run-as group');
      }
      assert.notEqual(first.uid, second.uid, 'two brokers\' concurrent runs never share a uid');
      // Both locks are in the one directory the two brokers share.
      assert.ok(existsSync(join(varLib, 'skill-mcp', 'run-uids', String(first.uid))));
      assert.ok(existsSync(join(varLib, 'skill-mcp', 'run-uids', String(second.uid))));
    } finally {
      await Promise.all([a.close(), b.close()]);
      removeDir(varLib);
    }
  });
});
