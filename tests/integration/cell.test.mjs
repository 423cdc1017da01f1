// The run's cell (docs/isolation.md "The run's processes"):
// each run in its own pid and IPC namespace under SKILL_MCP_NAMESPACES=auto (the
// default), dying with its broker with or without namespaces, receipts unchanged.
// Every case runs with the broker as root (uid switch) when the test is root, and as an
// unprivileged user (setpriv to 65534 when root, else this user); each namespaced case
// has a control with SKILL_MCP_NAMESPACES=off showing what it stops.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, rpcOver, serverEnv, sleep } from './lib.mjs';

const SCRIPTS = {
  // Creates a System V shared memory segment, message queue and semaphore set.
  'ipc-make.js': `'use strict';
const { execFileSync } = require('node:child_process');
const mk = (a) => /id: (\\d+)/.exec(execFileSync('ipcmk', a, { encoding: 'utf8' }))[1];
console.log(JSON.stringify({ shm: mk(['-M', '4096']), msg: mk(['-Q']), sem: mk(['-S', '1']) }));
`,
  // Lists the System V objects it can see (its IPC namespace's /proc/sysvipc).
  'ipc-list.js': `'use strict';
const fs = require('node:fs');
const ids = (k) => fs.readFileSync('/proc/sysvipc/' + k, 'utf8').trim().split('\\n').slice(1)
  .map((l) => l.trim().split(/\\s+/)[1]);
console.log(JSON.stringify({ shm: ids('shm'), msg: ids('msg'), sem: ids('sem') }));
`,
  // Tries to see and signal the process named by argv[2] (the broker).
  'outside.js': `'use strict';
const fs = require('node:fs');
const target = Number(process.argv[2]);
let signal;
try { process.kill(target, 0); signal = 'sent'; } catch (e) { signal = e.code; }
const bounding = /CapBnd:\\s+(\\S+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1];
console.log(JSON.stringify({ pid: process.pid, signal, procEntry: fs.existsSync('/proc/' + target), bounding }));
`,
  // Forks two detached children carrying argv[2], then waits for ever.
  'forks.js': `'use strict';
const { spawn } = require('node:child_process');
for (let i = 0; i < 2; i++)
  spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', process.argv[2]],
        { stdio: 'ignore', detached: true }).unref();
setInterval(() => {}, 1000);
`,
  'exit7.js': "process.exit(7);\n",
  'usr2.js': "process.kill(process.pid, 'SIGUSR2'); setInterval(() => {}, 1000);\n",
  'hang.js': "setInterval(() => {}, 1000);\n",
  'stubborn.js': "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000);\n",
};

let root;
before(() => {
  root = freshDir('skill-mcp-cell-');
  const dir = join(root, 'cell');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  const run = Object.keys(SCRIPTS).map((s) =>
    `    - script: scripts/${s}\n      interpreter: node\n      timeout: ${/hang|stubborn/.test(s) ? 1 : 60}\n`).join('');
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    `name: cell\ndescription: Probes the run's cell.\nmcp-host:\n  version: 1\n  run:\n${run}`, '\n# Cell\n'));
  for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(dir, 'scripts', name), text);
});
after(() => removeDir(root));

const isRoot = process.getuid() === 0;
// Each way the tests can start the broker here.
const MODES = [
  ...(isRoot ? [{ name: 'root (uid switch)', wrap: [] }] : []),
  { name: 'unprivileged', wrap: isRoot ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [] },
];

function startBroker(mode, env) {
  const argv = [...mode.wrap, BIN];
  const child = spawn(argv[0], argv.slice(1), {
    env: serverEnv({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', ...env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const { send, answer } = rpcOver(child);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const broker = {
    child,
    async init() {
      await answer(send('initialize', { protocolVersion: '2025-06-18', capabilities: {},
                                        clientInfo: { name: 'cell', version: '1' } }));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    },
    // The confirmed call, sent; resolves to its answer's id.
    async start(script, args = []) {
      const a = { name: 'cell', script: `scripts/${script}`, args };
      const first = await answer(send('tools/call', { name: 'skill_run', arguments: a }));
      const token = JSON.parse(first.result.content[0].text).confirmToken;
      assert.ok(token, JSON.stringify(first));
      return send('tools/call', { name: 'skill_run', arguments: { ...a, confirmToken: token } });
    },
    async run(script, args = []) {
      const m = await answer(await broker.start(script, args), 30000);
      assert.notEqual(m.result?.isError, true, JSON.stringify(m));
      return JSON.parse(m.result.content[0].text);
    },
    async close() {
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
    exited,
  };
  return broker;
}

async function withBroker(mode, env, f) {
  const broker = startBroker(mode, env);
  try {
    await broker.init();
    return await f(broker);
  } finally {
    await broker.close();
  }
}

const ON = { SKILL_MCP_NAMESPACES: 'on' };
const OFF = { SKILL_MCP_NAMESPACES: 'off' };

// Host processes whose command line carries `token` (the run's, across its namespace).
function carrying(token) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (argv.includes(token) && !/^\d+ \(.*\) Z /.test(stat)) found.push(Number(name));
    } catch { /* gone meanwhile */ }
  }
  return found;
}

async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// Whether this host gives runs their namespaces at all (the boot probe, via doctor).
function doctor(mode, env = {}) {
  const argv = [...mode.wrap, BIN, 'doctor'];
  return spawnSync(argv[0], argv.slice(1), {
    env: serverEnv({ SKILLS_DIR: root, ...env }), encoding: 'utf8' });
}
function namespacesHere(mode) {
  return /run-namespaces: on/.test(doctor(mode).stdout);
}

for (const mode of MODES) {
  describe(`the run's cell, broker ${mode.name}`, () => {
    test('auto is the default: doctor reports the namespace, fresh /proc and parent-death layers', (t) => {
      const d = doctor(mode);
      assert.match(d.stdout, /parent-death: on/, d.stdout);
      assert.match(d.stdout, /fresh-proc: (on|off)/, d.stdout);
      if (!namespacesHere(mode)) return t.skip(`no namespaces for runs here: ${d.stdout}`);
      assert.match(d.stdout, /run-namespaces: on/, d.stdout);
      assert.equal(d.status, 0, d.stdout);
    });

    test('System V IPC left by one run is not visible to a later run', async (t) => {
      if (!namespacesHere(mode)) return t.skip('this host refuses the namespaces (doctor says why)');
      await withBroker(mode, {}, async (b) => {
        const made = await b.run('ipc-make.js');
        assert.equal(made.exitCode, 0, made.stderr);
        const seen = JSON.parse((await b.run('ipc-list.js')).stdout);
        assert.deepEqual(seen, { shm: [], msg: [], sem: [] });
      });
      // Control: without namespaces, and without the seccomp filter that refuses System V
      // IPC where no namespace clears it (doors.test.mjs), the next run sees them (then
      // they are removed).
      // (The host's network too: with neither namespaces nor the filter, the declared network
      // mode's fallback could not hold, and runs would be refused.)
      await withBroker(mode, { ...OFF, SKILL_MCP_SECCOMP: 'off', SKILL_MCP_NETWORK: 'on' }, async (b) => {
        const made = JSON.parse((await b.run('ipc-make.js')).stdout);
        try {
          const seen = JSON.parse((await b.run('ipc-list.js')).stdout);
          assert.ok(seen.shm.includes(made.shm) && seen.msg.includes(made.msg) &&
                    seen.sem.includes(made.sem), JSON.stringify({ made, seen }));
        } finally {
          execFileSync('ipcrm', ['-m', made.shm, '-q', made.msg, '-s', made.sem]);
        }
      });
    });

    test('a run can neither see nor signal the broker; its bounding set is empty', async (t) => {
      if (!namespacesHere(mode)) return t.skip('this host refuses the namespaces (doctor says why)');
      const freshProc = /fresh-proc: on/.test(doctor(mode).stdout);
      await withBroker(mode, {}, async (b) => {
        const r = await b.run('outside.js', [String(b.child.pid)]);
        const seen = JSON.parse(r.stdout);
        assert.equal(seen.signal, 'ESRCH', r.stdout);
        assert.equal(seen.pid, 2, 'node runs under the namespace init, never as pid 1');
        if (freshProc) assert.equal(seen.procEntry, false, r.stdout);
        assert.equal(seen.bounding, '0000000000000000', r.stdout);
      });
      await withBroker(mode, OFF, async (b) => {  // control
        const seen = JSON.parse((await b.run('outside.js', [String(b.child.pid)])).stdout);
        assert.notEqual(seen.signal, 'ESRCH');
        assert.equal(seen.procEntry, true);
        if (isRoot && mode.wrap.length === 0) assert.equal(seen.bounding, '0000000000000000');
      });
    });

    for (const [label, env] of [['with namespaces', ON], ['without namespaces', OFF]]) {
      test(`SIGKILL of the broker mid-run leaves nothing of the run (${label})`, async (t) => {
        if (env === ON && !namespacesHere(mode)) return t.skip('this host refuses the namespaces');
        const token = `skill-mcp-cell-${process.pid}-${Date.now()}`;
        const b = startBroker(mode, env);
        try {
          await b.init();
          await b.start('forks.js', [token]);
          await waitFor(() => carrying(token).length >= 3, 15000, 'the script and its two children');
          b.child.kill('SIGKILL');
          await b.exited;
          await waitFor(() => carrying(token).length === 0, 10000,
                        `the run to die with its broker (left: ${carrying(token)})`);
        } finally {
          for (const pid of carrying(token)) process.kill(pid, 'SIGKILL');
          b.child.kill('SIGKILL');
        }
      });
    }

    test('receipts are unchanged in the cell: exit code, signal, timeout', async (t) => {
      if (!namespacesHere(mode)) return t.skip('this host refuses the namespaces');
      await withBroker(mode, ON, async (b) => {
        const exit = await b.run('exit7.js');
        assert.equal(exit.exitCode, 7, JSON.stringify(exit));
        assert.equal(exit.signal, null, JSON.stringify(exit));
        const sig = await b.run('usr2.js');
        assert.equal(sig.signal, 'SIGUSR2', JSON.stringify(sig));
        // node is not pid 1: the timeout's SIGTERM ends it with its default action.
        const term = await b.run('hang.js');
        assert.equal(term.timedOut, true, JSON.stringify(term));
        assert.equal(term.signal, 'SIGTERM', JSON.stringify(term));
        const stubborn = await b.run('stubborn.js');
        assert.equal(stubborn.timedOut, true, JSON.stringify(stubborn));
        assert.equal(stubborn.signal, 'SIGKILL', JSON.stringify(stubborn));
      });
    });
  });
}

describe('SKILL_MCP_NAMESPACES=auto on a host that refuses them', () => {
  test('runs go on without namespaces and doctor says why', async () => {
    const denied = process.env.SKILL_MCP_TEST_UNSHARE_DENIED;
    assert.ok(denied, 'SKILL_MCP_TEST_UNSHARE_DENIED names the wrapper (meson sets it)');
    const env = serverEnv({ SKILLS_DIR: root });
    const d = spawnSync(denied, [BIN, 'doctor'], { env, encoding: 'utf8' });
    assert.equal(d.status, 0, d.stdout + d.stderr);
    assert.match(d.stdout, /run-namespaces: off/);
    assert.match(d.stdout, /SKILL_MCP_NAMESPACES=auto runs without them/);
    await withBroker({ wrap: [denied] }, {}, async (b) => {
      const r = await b.run('exit7.js');
      assert.equal(r.exitCode, 7, JSON.stringify(r));
    });
  });
});
