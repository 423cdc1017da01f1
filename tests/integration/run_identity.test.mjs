// Own identity per run (docs/isolation.md "Own identity per run"):
// under a root broker every run gets a uid of its own from SKILL_MCP_RUN_UIDS, allocated
// host-wide through locks in the shared state directory. Two brokers (two connections
// under the systemd unit) run scripts at once; the first tries to read the second's
// granted secret from /proc/<pid>/environ, to write its memory, to kill it, and to use up
// the nproc limit so the second cannot start, with namespaces off and on. Each attack has
// a control with SKILL_MCP_RUN_UIDS=off (the shared run-as uid) showing what it stops.
// As an unprivileged user (setpriv to 65534) the layer is off and doctor says why.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, rpcOver, serverEnv, sleep } from './lib.mjs';

const SECRET = 'the-victims-granted-secret-7d1f';
const SERVICE_UID = 64101;  // the broker's service identity (numeric: no passwd entry needed)
const RUN_AS_UID = 64100;   // the run-as identity: its group is every run's group

const SCRIPTS = {
  // Writes {pid, uid, gid} to argv[2] and waits (its environment holds CELL_SECRET).
  'victim.js': `'use strict';
require('node:fs').writeFileSync(process.argv[2], JSON.stringify({ pid: process.pid,
  uid: process.getuid(), gid: process.getgid(), secret: process.env.CELL_SECRET === '${SECRET}' }));
setInterval(() => {}, 1000);
`,
  // Attacks the process argv[2] the three ways a shared uid allowed.
  'attack.js': `'use strict';
const fs = require('node:fs');
const pid = Number(process.argv[2]);
const out = { uid: process.getuid() };
try { out.environ = fs.readFileSync('/proc/' + pid + '/environ', 'latin1').includes('${SECRET}') ? 'read' : 'no-secret'; }
catch (e) { out.environ = e.code; }
try { fs.closeSync(fs.openSync('/proc/' + pid + '/mem', 'r+')); out.mem = 'opened'; }
catch (e) { out.mem = e.code; }
try { process.kill(pid, 'SIGKILL'); out.kill = 'sent'; } catch (e) { out.kill = e.code; }
console.log(JSON.stringify(out));
`,
  // Starts sleepers until the nproc limit refuses one, says so in argv[2], and waits.
  'hog.js': `'use strict';
const { spawn } = require('node:child_process');
let n = 0;
const more = () => {
  const c = spawn('/bin/sleep', ['300'], { stdio: 'ignore' });
  c.on('spawn', () => { n++; more(); });
  c.on('error', (e) => require('node:fs').writeFileSync(process.argv[2],
    JSON.stringify({ uid: process.getuid(), spawned: n, error: e.code })));
};
more();
setInterval(() => {}, 1000);
`,
  'whoami.js': `'use strict';
const st = require('node:fs').statSync(process.env.TMPDIR);
console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), tmpOwner: st.uid, tmpGroup: st.gid }));
`,
  // Starts a sleeper in a session of its own (only possible with seccomp off), carrying
  // argv[3]; writes its pid and uid to argv[2]; waits.
  'escape.js': `'use strict';
const { spawn } = require('node:child_process');
const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', process.argv[3]],
                { stdio: 'ignore', detached: true });
c.on('spawn', () => require('node:fs').writeFileSync(process.argv[2],
  JSON.stringify({ pid: c.pid, uid: process.getuid() })));
setInterval(() => {}, 1000);
`,
};

let root, markers, state;
before(() => {
  root = freshDir('skill-mcp-uid-');
  const dir = join(root, 'ids');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  const run = Object.keys(SCRIPTS).map((s) => `    - script: scripts/${s}\n      interpreter: node\n` +
    `      timeout: ${/victim|hog|escape/.test(s) ? 120 : 10}\n` +
    (s === 'victim.js' ? '      env: [CELL_SECRET]\n' : '')).join('');
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    `name: ids\ndescription: Probes per-run identities.\nmcp-host:\n  version: 1\n  run:\n${run}`, '\n# Ids\n'));
  for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(dir, 'scripts', name), text);
  // Every run's uid writes here (MCP_DATA_DIR, below).
  markers = mkdtempSync('/var/tmp/skill-mcp-uid-markers-');
  chmodSync(markers, 0o1777);
  // The host-wide state directory, as the unit's StateDirectory=: the service user's own.
  state = join(root, 'state');
  mkdirSync(state, { mode: 0o700 });
  if (process.getuid() === 0) chownSync(state, SERVICE_UID, SERVICE_UID);
});
after(() => { removeDir(root); removeDir(markers); });

const isRoot = process.getuid() === 0;
const ROOT_MODE = { name: 'root (uid switch)', wrap: [] };
const UNPRIVILEGED = { name: 'unprivileged', wrap: isRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [] };
const BASE = { SKILL_MCP_USER: String(SERVICE_UID), SKILL_MCP_RUN_AS: String(RUN_AS_UID), CELL_SECRET: SECRET };

// The markers directory is MCP_DATA_DIR: the one place outside its scratch directory a
// namespaced run may write (docs/isolation.md, "Doors out of the cell"). It makes the
// broker hosted, so the owner's grant names every script and the victim's variable.
const GRANT = JSON.stringify(Object.keys(SCRIPTS).map((s) => ({
  skill: 'ids', script: `scripts/${s}`, ...(s === 'victim.js' ? { env: ['CELL_SECRET'] } : {}) })));

function env(extra) {
  return serverEnv({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_STATE_DIR: state,
                     MCP_DATA_DIR: markers, MCP_SKILL_RUN: GRANT, ...BASE, ...extra });
}

function startBroker(mode, extra) {
  const argv = [...mode.wrap, BIN];
  const child = spawn(argv[0], argv.slice(1), { env: env(extra), stdio: ['pipe', 'pipe', 'pipe'] });
  const { send, answer } = rpcOver(child, 30000);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const b = {
    child, exited, answer,
    async init() {
      await answer(send('initialize', { protocolVersion: '2025-06-18', capabilities: {},
                                        clientInfo: { name: 'ids', version: '1' } }));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    },
    // Sends the confirmed call; resolves to the id of its answer.
    async start(script, args = []) {
      const a = { name: 'ids', script: `scripts/${script}`, args };
      const first = await answer(send('tools/call', { name: 'skill_run', arguments: a }));
      const token = JSON.parse(first.result.content[0].text).confirmToken;
      assert.ok(token, JSON.stringify(first));
      return send('tools/call', { name: 'skill_run', arguments: { ...a, confirmToken: token } });
    },
    // The whole answer of a run (tools/call result), refusals included.
    async call(script, args = []) {
      return (await answer(await b.start(script, args))).result;
    },
    async run(script, args = []) {
      const r = await b.call(script, args);
      assert.notEqual(r.isError, true, JSON.stringify(r));
      return JSON.parse(r.content[0].text);
    },
    async close() {
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
  return b;
}

async function withBrokers(extra, f) {
  const a = startBroker(ROOT_MODE, extra), b = startBroker(ROOT_MODE, extra);
  try {
    await Promise.all([a.init(), b.init()]);
    return await f(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
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

let seq = 0;
const marker = (what) => join(markers, `${what}-${process.pid}-${++seq}`);

function doctor(mode, extra = {}) {
  const argv = [...mode.wrap, BIN, 'doctor'];
  return spawnSync(argv[0], argv.slice(1), { env: env(extra), encoding: 'utf8' });
}
const namespacesHere = () => /run-namespaces: on/.test(doctor(ROOT_MODE).stdout);
const DEFAULT = [1879048192, 1879113727];
const inRange = (uid, [lo, hi] = DEFAULT) => uid >= lo && uid <= hi;

describe('own identity per run: doctor', () => {
  test('a root broker with a state directory reports the layer on, with its range and free uids', (t) => {
    if (!isRoot) return t.skip('needs root: only a broker that can switch uids has the layer');
    const d = doctor(ROOT_MODE);
    assert.match(d.stdout, /run-identity: on\n\s+each run gets a uid of its own from 1879048192-1879113727 \(65536 uids, \d+ free now; locks in .*\/run-uids\), keeping the run-as group 64100/, d.stdout);
    assert.equal(d.status, 0, d.stdout);
    // The pool is host-wide only among brokers sharing this lock directory: doctor names it.
    assert.ok(d.stdout.includes(`the pool is shared only by brokers using ${state}/run-uids: give every ` +
                                'broker of this host the same SKILL_MCP_STATE_DIR or disjoint SKILL_MCP_RUN_UIDS'), d.stdout);
    const off = doctor(ROOT_MODE, { SKILL_MCP_RUN_UIDS: 'off' });
    assert.match(off.stdout, /run-identity: off\n\s+turned off by SKILL_MCP_RUN_UIDS=off/, off.stdout);
    const nostate = doctor(ROOT_MODE, { SKILL_MCP_STATE_DIR: undefined });
    assert.match(nostate.stdout, /run-identity: off\n\s+the uid locks need the host-wide state directory/, nostate.stdout);
    // A range the operator named and that cannot work: required, so doctor fails.
    const demanded = doctor(ROOT_MODE, { SKILL_MCP_STATE_DIR: undefined, SKILL_MCP_RUN_UIDS: '1879100000-1879100009' });
    assert.match(demanded.stdout, /run-identity: off  << required by this configuration/, demanded.stdout);
    assert.equal(demanded.status, 1);
    const bad = doctor(ROOT_MODE, { SKILL_MCP_RUN_UIDS: '64000-64200' });
    assert.match(bad.stdout, /SKILL_MCP_RUN_UIDS=64000-64200 holds uid 641\d\d, which the broker or the run-as identity uses/, bad.stdout);
  });

  test('a named range among the host\'s users runs nothing, and doctor says why', (t) => {
    if (!isRoot) return t.skip('needs root: only a broker that can switch uids has the layer');
    // The probe cannot see a uid's processes in a user namespace another uid created
    // (docs/isolation.md): ids the host hands out are refused.
    const low = doctor(ROOT_MODE, { SKILL_MCP_RUN_UIDS: '1000-1009' });
    assert.match(low.stdout, /run-identity: off  << required by this configuration\n\s+the range 1000-1009 overlaps 0-60000, the system and regular users of a Debian host/, low.stdout);
    assert.equal(low.status, 1, low.stdout);
  });

  test('doctor warns when MCP_DATA_DIR cannot be written by a run', (t) => {
    if (!isRoot) return t.skip('needs root: only a broker that can switch uids has the layer');
    const data = join(root, 'data');
    mkdirSync(data, { mode: 0o700 });
    const warned = doctor(ROOT_MODE, { MCP_DATA_DIR: data });
    assert.match(warned.stdout, /run-identity: on\n.*warning: MCP_DATA_DIR \(.*\/data\) cannot be written by a run: give the run-as group 64100 write and search/, warned.stdout);
    chownSync(data, 0, RUN_AS_UID);
    chmodSync(data, 0o2770);  // what docs/deployment.md tells the operator to do
    const fine = doctor(ROOT_MODE, { MCP_DATA_DIR: data });
    assert.match(fine.stdout, /run-identity: on\n/, fine.stdout);
    assert.doesNotMatch(fine.stdout, /MCP_DATA_DIR \(.*\) cannot be written/, fine.stdout);
  });

  test('an unprivileged broker reports the layer off with the reason', () => {
    const d = doctor(UNPRIVILEGED);
    assert.match(d.stdout, /run-identity: off\n\s+the broker cannot switch uids, so every run shares its uid/, d.stdout);
  });
});

for (const [label, ns] of [['namespaces off', 'off'], ['namespaces on', 'on']]) {
  describe(`own identity per run, two brokers, ${label}`, () => {
    const skip = (t) => {
      if (!isRoot) return t.skip('needs root: an unprivileged broker cannot switch uids (see doctor)'), true;
      if (ns === 'on' && !namespacesHere()) return t.skip('this host refuses the run namespaces (doctor says why)'), true;
      return false;
    };
    const NS = { SKILL_MCP_NAMESPACES: ns };

    test('a run cannot read, write or kill another broker\'s run; the uids differ', async (t) => {
      if (skip(t)) return;
      await withBrokers(NS, async (a, b) => {
        const where = marker('victim');
        const victimCall = b.start('victim.js', [where]);
        const victim = await waitForFile(where);
        assert.equal(victim.secret, true, 'the victim holds its granted secret');
        assert.ok(inRange(victim.uid), `victim uid ${victim.uid}`);
        assert.equal(victim.gid, RUN_AS_UID, 'every run keeps the run-as group');
        // With namespaces the victim's pid is the one the host sees: find it by its marker.
        const hostPid = ns === 'on' ? hostPidOf(where) : victim.pid;
        const seen = await a.run('attack.js', [String(hostPid)]);
        const got = JSON.parse(seen.stdout);
        assert.ok(inRange(got.uid), `attacker uid ${got.uid}`);
        assert.notEqual(got.uid, victim.uid, 'two concurrent runs never share a uid');
        assert.notEqual(got.environ, 'read', JSON.stringify(got));
        assert.notEqual(got.mem, 'opened', JSON.stringify(got));
        assert.notEqual(got.kill, 'sent', JSON.stringify(got));
        if (ns === 'off') {  // the uid alone stops them: another uid, no capability
          assert.deepEqual([got.environ, got.mem, got.kill], ['EACCES', 'EACCES', 'EPERM'], JSON.stringify(got));
        }
        assert.ok(existsSync(`/proc/${hostPid}`), 'the victim still runs');
        void victimCall;  // it ends when its broker closes
      });
    });

    test('one run using up its nproc limit does not keep another broker\'s run from starting', async (t) => {
      if (skip(t)) return;
      const limits = { ...NS, SKILL_MCP_LIMIT_NPROC: '48' };
      await withBrokers(limits, async (a, b) => {
        const where = marker('hog');
        a.start('hog.js', [where]);
        const hog = await waitForFile(where, 60000);
        assert.equal(hog.error, 'EAGAIN', JSON.stringify(hog));
        const r = await b.run('whoami.js');
        assert.equal(r.exitCode, 0, JSON.stringify(r));
        const me = JSON.parse(r.stdout);
        assert.notEqual(me.uid, hog.uid);
        // The scratch TMPDIR is made for the run's own uid (and the run-as group).
        assert.deepEqual([me.tmpOwner, me.tmpGroup], [me.uid, RUN_AS_UID], r.stdout);
      });
    });

    test('control: with SKILL_MCP_RUN_UIDS=off the same attacks reach the other run', async (t) => {
      if (skip(t)) return;
      const shared = { ...NS, SKILL_MCP_RUN_UIDS: 'off', SKILL_MCP_LIMIT_NPROC: '48' };
      await withBrokers(shared, async (a, b) => {
        const where = marker('hog-shared');
        a.start('hog.js', [where]);
        const hog = await waitForFile(where, 60000);
        assert.equal(hog.uid, RUN_AS_UID);
        const r = await b.call('whoami.js');
        // Starved of processes and threads, node either fails to start or hangs until its
        // (10 s) timeout: either way the other connection's run is denied.
        const timedOut = r.isError !== true && JSON.parse(r.content[0].text).timedOut === true;
        assert.ok(r.isError === true || timedOut, `the shared uid's nproc is used up: ${JSON.stringify(r)}`);
      });
      if (ns === 'on') return;  // the pid namespace already stops these three
      await withBrokers(shared, async (a, b) => {
        const where = marker('victim-shared');
        b.start('victim.js', [where]);
        const victim = await waitForFile(where);
        const got = JSON.parse((await a.run('attack.js', [String(victim.pid)])).stdout);
        assert.equal(got.uid, victim.uid);
        assert.equal(got.environ, 'read', JSON.stringify(got));
        assert.equal(got.kill, 'sent', JSON.stringify(got));
      });
    });
  });
}

// Host processes of `uid`, zombies included.
function processesOf(uid) {
  const r = spawnSync('ps', ['-o', 'pid=', '-u', String(uid)], { encoding: 'utf8' });
  return r.stdout.trim().split('\n').filter(Boolean);
}

async function waitUntil(pred, what, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// The broker's children: {pid, uid} (real uid), in pid order.
function childrenOf(ppid) {
  const r = spawnSync('ps', ['-o', 'pid=,ruid=', '--ppid', String(ppid)], { encoding: 'utf8' });
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => {
    const [pid, uid] = l.trim().split(/\s+/).map(Number);
    return { pid, uid };
  }).sort((x, y) => x.pid - y.pid);
}

// The host pid of the process whose command line names `path` (a namespaced run's node).
function hostPidOf(path) {
  const r = spawnSync('pgrep', ['-f', '--', path], { encoding: 'utf8' });
  const pids = r.stdout.trim().split('\n').filter(Boolean).map(Number);
  assert.equal(pids.length, 1, `one process carries ${path}: ${r.stdout}`);
  return pids[0];
}

describe('own identity per run: allocation', () => {
  const ONE = '1879100100-1879100100';

  test('with one uid in the range, a second broker\'s run is refused while the first runs', async (t) => {
    if (!isRoot) return t.skip('needs root: an unprivileged broker cannot switch uids');
    await withBrokers({ SKILL_MCP_RUN_UIDS: ONE, SKILL_MCP_NAMESPACES: 'off' }, async (a, b) => {
      const where = marker('one');
      a.start('victim.js', [where]);
      const first = await waitForFile(where);
      assert.equal(first.uid, 1879100100);
      const r = await b.call('whoami.js');
      assert.equal(r.isError, true, JSON.stringify(r));
      const text = r.content[0].text;
      assert.match(text, /RUN_NOT_STARTED/, text);
      assert.match(text, /every uid of the run range 1879100100-1879100100 is taken \(1 by running scripts/, text);
    });
  });

  // The worker waiting for the next run takes its uid when it starts, from a range of at
  // least 4096 uids (kUidsAheadMinRange, broker/run/run_uids.h), so the uid's probe is
  // off the run's path, and switches to it while it waits; its run gets that uid. From a
  // smaller range a waiting worker holds no uid: the run takes one when it starts.
  test('from a range of 4096 uids the waiting worker already runs as its run\'s uid; from 4095 it holds none', async (t) => {
    if (!isRoot) return t.skip('needs root: an unprivileged broker cannot switch uids');
    for (const [range, ahead] of [['1879100200-1879104295', true], ['1879100200-1879104294', false]]) {
      const lo = 1879100200, hi = ahead ? 1879104295 : 1879104294;
      const b = startBroker(ROOT_MODE, { SKILL_MCP_RUN_UIDS: range, SKILL_MCP_NAMESPACES: 'off' });
      try {
        await b.init();
        let waiting;
        await waitUntil(() => {
          waiting = childrenOf(b.child.pid)[0];
          return waiting !== undefined && (!ahead || inRange(waiting.uid, [lo, hi]));
        }, `a worker waiting ${ahead ? 'as a uid of the range' : ''} (${range})`);
        if (!ahead) {
          await sleep(300);
          assert.deepEqual(childrenOf(b.child.pid), [waiting], 'the waiting worker switched ids');
          assert.equal(waiting.uid, SERVICE_UID, 'the waiting worker is not the broker\'s uid');
        }
        const r = await b.run('whoami.js');
        assert.equal(r.exitCode, 0, JSON.stringify(r));
        const who = JSON.parse(r.stdout);
        assert.ok(inRange(who.uid, [lo, hi]), JSON.stringify(who));
        if (ahead) assert.equal(who.uid, waiting.uid, 'the run did not get the waiting worker\'s uid');
        assert.equal(who.tmpOwner, who.uid);
      } finally {
        await b.close();
      }
    }
  });

  test('a uid whose processes outlived a SIGKILLed broker is not handed out again', async (t) => {
    if (!isRoot) return t.skip('needs root: an unprivileged broker cannot switch uids');
    // Seccomp off lets the script leave its process group (setsid), so a process of the
    // run outlives its killed broker (namespaces off: no pid namespace ends it).
    // The host's network: with neither, the declared mode's fallback (off) could not hold.
    const extra = { SKILL_MCP_RUN_UIDS: ONE, SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_SECCOMP: 'off',
                    SKILL_MCP_NETWORK: 'on' };
    const token = `skill-mcp-uid-${process.pid}-${Date.now()}`;
    const where = marker('escape');
    const a = startBroker(ROOT_MODE, extra);
    let left;
    try {
      await a.init();
      a.start('escape.js', [where, token]);
      left = await waitForFile(where);
      assert.equal(left.uid, 1879100100);
      a.child.kill('SIGKILL');
      await a.exited;
      await sleep(300);
      assert.ok(existsSync(`/proc/${left.pid}`), 'the escaped process outlived its broker');
      const b = startBroker(ROOT_MODE, extra);
      try {
        await b.init();
        const r = await b.call('whoami.js');
        assert.equal(r.isError, true, `uid 1879100100 still has a process: ${JSON.stringify(r)}`);
        assert.match(r.content[0].text, /1 by processes left from earlier runs/, r.content[0].text);
        process.kill(left.pid, 'SIGKILL');
        // Until init has reaped them, dead processes of the uid still count (fail closed).
        await waitUntil(() => processesOf(1879100100).length === 0, 'the uid to have no process');
        const again = await b.run('whoami.js');
        assert.equal(again.exitCode, 0, JSON.stringify(again));
        assert.equal(JSON.parse(again.stdout).uid, 1879100100);
        assert.equal(JSON.parse(again.stdout).tmpOwner, 1879100100);
      } finally {
        await b.close();
      }
    } finally {
      a.child.kill('SIGKILL');
      if (left && existsSync(`/proc/${left.pid}`)) process.kill(left.pid, 'SIGKILL');
    }
  });
});
