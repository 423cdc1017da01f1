// No door out of the cell (docs/isolation.md, "Doors out of the cell"), with the real
// broker, worker and node. A confirmed script tries each door an attacker would try on a
// desktop: the session bus under the broker's XDG_RUNTIME_DIR, an agent socket in the
// broker's HOME (wherever it is), sockets in a /tmp directory, in /var/tmp, under /run and
// /var/run, and the mode, times and extended attributes of a 0666 file outside and of its
// own bundle. Each case runs in every mode the server runs in:
// - namespaces on: the view hides every place and is read-only (ENOENT, EROFS);
// - namespaces off (as where the kernel refuses them): seccomp's no-view groups refuse
//   socket(AF_UNIX), the metadata calls and System V IPC (EPERM);
// - namespaces on, Landlock off: the view hides the places, the seccomp fence refuses unix
//   sockets (abstract ones are not scoped without Landlock ABI 6);
// - the control, namespaces, seccomp and Landlock off: every door opens, so the
//   observations above are the fences', never a broken channel.
// Each mode also has its positive control in the same run: a socket the run made in its
// own scratch directory connects (with a view), node's own pipes work (socketpair), and
// MCP_DATA_DIR under /tmp is written (and its file's mode changed, with a view).
// With the broker as root (runs under their own uid) and as uid 65534 (setpriv), the
// ordinary user whose own files and sockets are the ones at stake.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, realpathSync,
         rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, connect } from './lib.mjs';

const IS_ROOT = process.getuid() === 0;
const USER_UID = 65534;
const PROBE = process.env.SKILL_MCP_TEST_PROBE;

// Runs the operations named in argv[2] ({key: [op, arg]}); prints {key: outcome}.
const DOORS_JS = `'use strict';
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const ops = JSON.parse(process.argv[2]);
const tmp = process.env.TMPDIR;
let probe;
const runProbe = (args) => {
  if (!probe) {
    probe = path.join(tmp, 'try_syscall');
    // why writeFile with a mode, not copyFile: copyFile's fchmod is refused without a view.
    fs.writeFileSync(probe, fs.readFileSync(path.join(__dirname, 'try_syscall')), { mode: 0o755 });
  }
  try { return execFileSync(probe, args, { encoding: 'utf8' }).trim().split(' ').pop(); }
  catch (e) { return 'probe: ' + (e.code ?? e.status); }
};
const connectTo = (p) => new Promise((resolve) => {
  let s;
  try { s = net.connect({ path: p }); } catch (e) { resolve(e.code); return; }
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
});
const ownSocket = () => new Promise((resolve) => {
  const p = path.join(tmp, 'own.sock');
  const server = net.createServer((c) => c.destroy());
  server.on('error', (e) => resolve(e.code));
  server.listen(p, async () => { const r = await connectTo(p); server.close(); resolve(r); });
});
const attempt = (fn) => { try { fn(); return 'changed'; } catch (e) { return e.code; } };
(async () => {
  const out = { uid: process.getuid() };
  for (const [key, [op, arg]] of Object.entries(ops)) {
    out[key] = op === 'connect' ? await connectTo(arg)
      : op === 'own-socket' ? await ownSocket()
      : op === 'pipe' ? attempt(() => execFileSync(process.execPath, ['-e', 'process.stdout.write("x")']))
      : op === 'chmod' ? attempt(() => fs.chmodSync(arg, 0o640))
      : op === 'utimes' ? attempt(() => fs.utimesSync(arg, 1000, 1000))
      : op === 'write' ? attempt(() => fs.writeFileSync(arg, 'by a run'))
      : op === 'abstract' ? await connectTo('\\0' + arg)
      : op === 'dgram' ? runProbe(['dgram', arg])
      : op === 'xattr' ? runProbe(['xattr', arg])
      : op === 'sysv' ? runProbe(['sysv'])
      : 'bad op';
  }
  console.log(JSON.stringify(out));
})();
`;

const GRANT = JSON.stringify([{ skill: 'doors', script: 'scripts/doors.js' }]);

// Listens on a unix socket at `path`, with `mode` on the socket, owned by `uid`.
async function listen(path, mode, uid) {
  const server = createServer((s) => s.destroy());
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  chmodSync(path, mode);
  if (uid !== undefined) chownSync(path, uid, uid);
  return server;
}

// A datagram socket at `path` (0777), received by the probe; `got()` is what reached it.
async function listenDatagrams(path) {
  const child = spawn(PROBE, ['dgram-listen', path], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  for (let i = 0; i < 100 && !out.startsWith('ready'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(out.startsWith('ready'), `the datagram listener did not start: ${out}`);
  return { child, got: () => out.split('\n').slice(1).filter(Boolean) };
}

async function listenAbstract(name) {
  const server = createServer((s) => s.destroy());
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen('\0' + name, resolve);
  });
  return server;
}

// Everything one launcher's runs try, planted as root: the places, the listeners and the
// files, owned by the broker's own user (the one whose desktop is at stake).
async function plant(owner) {
  const tag = `skill-mcp-doors-${process.pid}-${owner ?? 'root'}`;
  const made = [];
  const servers = [];
  const dir = (p, mode, uid) => {
    mkdirSync(p, { recursive: true });
    chmodSync(p, mode);
    if (uid !== undefined) chownSync(p, uid, uid);
    made.push(p);
    return p;
  };
  const base = freshDir(`${tag}-skills-`);
  made.push(base);
  const root = join(base, 'skills');
  const skill = join(root, 'doors');
  mkdirSync(join(skill, 'scripts'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), skillMd(
    'name: doors\ndescription: Tries the doors.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/doors.js\n      interpreter: node\n      timeout: 60\n', '\n# Doors\n'));
  writeFileSync(join(skill, 'scripts', 'doors.js'), DOORS_JS);
  copyFileSync(PROBE, join(skill, 'scripts', 'try_syscall'));
  writeFileSync(join(skill, 'bundle.txt'), 'part of the bundle\n');
  spawnSync('chmod', ['-R', 'a+rX', base]);
  chmodSync(join(skill, 'bundle.txt'), 0o666);
  if (owner !== undefined) spawnSync('chown', ['-R', `${owner}:${owner}`, base]);

  // A place outside every fixed one: the broker's HOME may be anywhere.
  const lib = dir(`/var/lib/${tag}`, 0o755);
  const home = dir(join(lib, 'home'), 0o755, owner);
  dir(join(home, '.ssh'), 0o755, owner);
  const outside = join(lib, 'open.txt');
  writeFileSync(outside, 'a file anyone may write\n');
  chmodSync(outside, 0o666);
  if (owner !== undefined) chownSync(outside, owner, owner);
  const tmpDir = dir(`/tmp/${tag}-agent`, 0o755, owner);
  const runDir = dir(`/run/${tag}`, 0o755, owner);
  const data = dir(`/tmp/${tag}-data`, 0o777, owner);
  const sockets = {
    home: join(home, '.ssh', 'agent.sock'),
    tmp: join(tmpDir, 'agent.sock'),
    varTmp: `/var/tmp/${tag}.sock`,
    run: join(runDir, 'daemon.sock'),
  };
  for (const path of Object.values(sockets)) servers.push(await listen(path, 0o777, owner));
  made.push(sockets.varTmp);
  // A datagram socket under /run (a socketpair's end can send to any path) and an abstract
  // one (no path at all: only Landlock's scope or the seccomp fence keeps a run off it).
  const dgram = join(runDir, 'dgram.sock');
  const dgramListener = await listenDatagrams(dgram);
  const abstractName = `${tag}-abstract`;
  servers.push(await listenAbstract(abstractName));
  const env = { SKILLS_DIR: root, HOME: home, MCP_DATA_DIR: data };
  if (owner !== undefined) {
    // The desktop's session bus: the user's own 0700 runtime directory, a 0600 socket.
    const runtime = `/run/user/${owner}`;
    const fresh = !existsSync(runtime);
    dir(runtime, 0o700, owner);
    if (!fresh) made.pop();  // the host's own: only the socket is removed
    sockets.bus = join(runtime, `bus-${process.pid}`);
    servers.push(await listen(sockets.bus, 0o600, owner));
    made.push(sockets.bus);
    env.XDG_RUNTIME_DIR = runtime;
  }
  // The same socket by /var/run, where that is the usual link to /run.
  if (existsSync('/var/run') && realpathSync('/var/run') === '/run')
    sockets.varRun = join('/var/run', tag, 'daemon.sock');
  const ops = { ownSocket: ['own-socket'], pipe: ['pipe'],
                dataWrite: ['write', join(data, 'new.txt')], dataChmod: ['chmod', join(data, 'new.txt')],
                chmodOutside: ['chmod', outside], utimesOutside: ['utimes', outside],
                xattrOutside: ['xattr', outside],
                chmodBundle: ['chmod', join(skill, 'bundle.txt')],
                utimesBundle: ['utimes', join(skill, 'bundle.txt')],
                xattrBundle: ['xattr', join(skill, 'bundle.txt')], sysv: ['sysv'] };
  for (const [name, path] of Object.entries(sockets)) ops[`socket:${name}`] = ['connect', path];
  ops.dgram = ['dgram', dgram];
  ops.abstract = ['abstract', abstractName];
  return {
    env, ops, sockets, dgramListener,
    cleanup() {
      for (const s of servers) s.close();
      dgramListener.child.kill();
      for (const p of made.reverse()) rmSync(p, { recursive: true, force: true });
    },
  };
}

function launcher(asUser) {
  return asUser
    ? { command: 'setpriv', args: [`--reuid=${USER_UID}`, `--regid=${USER_UID}`, '--clear-groups', BIN] }
    : { command: BIN, args: [] };
}

async function runDoors(planted, env, asUser) {
  const conn = await connect({
    env: { MCP_CONFIRM_MODE: 'auto', MCP_SKILL_RUN: GRANT, SKILL_MCP_LANDLOCK: 'auto',
           ...planted.env, ...env },
    ...launcher(asUser),
  });
  try {
    const call = { name: 'doors', script: 'scripts/doors.js', args: [JSON.stringify(planted.ops)] };
    const first = await callJson(conn.client, 'skill_run', call);
    assert.equal(first.json?.status, 'confirmation-required', first.text);
    const done = await callJson(conn.client, 'skill_run', { ...call, confirmToken: first.json.confirmToken });
    assert.equal(done.isError, false, done.text);
    assert.equal(done.json.exitCode, 0, done.text);
    return JSON.parse(done.json.stdout);
  } finally {
    await conn.close();
  }
}

function doctor(planted, env, asUser) {
  const { command, args } = launcher(asUser);
  const r = spawnSync(command, [...args, 'doctor'], {
    env: { PATH: process.env.PATH, LANG: 'C.UTF-8', SKILL_MCP_WORKER: process.env.SKILL_MCP_WORKER,
           ...planted.env, ...env },
    encoding: 'utf8',
  });
  return r.stdout;
}

// The System V segments the host holds for `uid` (/proc/sysvipc/shm: the shmid column and
// the uid column), so a test can tell whether a run's segment outlived it.
function hostSegments(uid) {
  const lines = readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n').slice(1);
  return lines.map((l) => l.trim().split(/\s+/)).filter((f) => Number(f[7]) === uid).map((f) => f[1]);
}

const modes = IS_ROOT ? [['as root', false], [`as an ordinary user (setpriv ${USER_UID})`, true]]
                      : [];

if (!IS_ROOT) {
  test('the doors', (t) => t.skip('planting sockets under /run and /var/lib needs root'));
}

for (const [label, asUser] of modes) {
  describe(`doors out of the cell, ${label}`, () => {
    let planted;
    before(async () => { planted = await plant(asUser ? USER_UID : undefined); });
    after(() => planted?.cleanup());

    test('the control: with namespaces, seccomp and Landlock off every door opens', async () => {
      const seen = await runDoors(planted, { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_SECCOMP: 'off',
                                             SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_NETWORK: 'on' }, asUser);
      for (const name of Object.keys(planted.sockets))
        assert.equal(seen[`socket:${name}`], 'connected', `${name}: ${JSON.stringify(seen)}`);
      assert.equal(seen.xattrOutside, 'ok', JSON.stringify(seen));
      assert.equal(seen.utimesOutside, asUser ? 'changed' : 'EPERM', JSON.stringify(seen));
      assert.equal(seen.chmodOutside, asUser ? 'changed' : 'EPERM', JSON.stringify(seen));
      if (asUser) {  // the ordinary user owns the bundle: nothing but a fence keeps it
        assert.equal(seen.chmodBundle, 'changed', JSON.stringify(seen));
        assert.equal(seen.xattrBundle, 'ok', JSON.stringify(seen));
      }
      assert.match(seen.sysv, /^\d+$/, JSON.stringify(seen));
      const uid = seen.uid;
      assert.ok(hostSegments(uid).includes(seen.sysv), 'the segment outlives the run on the host');
      spawnSync('ipcrm', ['-m', seen.sysv]);
      assert.equal(seen.ownSocket, 'connected');
      assert.equal(seen.pipe, 'changed');
      assert.equal(seen.dgram, 'sent', JSON.stringify(seen));
      assert.ok(planted.dgramListener.got().includes('from a run'), 'the datagram reached its socket');
      assert.equal(seen.abstract, 'connected', JSON.stringify(seen));
    });

    test('namespaces auto and on: every place is hidden and the view is read-only', async (t) => {
      const report = doctor(planted, { SKILL_MCP_NAMESPACES: 'auto' }, asUser);
      if (!/run-namespaces: on/.test(report))
        return t.skip(`the run namespaces are off here: ${/run-namespaces: off\n\s+(.*)/.exec(report)?.[1]}`);
      assert.match(report, /private-view: on/);
      assert.match(report, /unix-sockets-fenced: on/);
      assert.match(report, /metadata-fenced: on/);
      for (const mode of ['auto', 'on']) {
        const before = hostSegments(asUser ? USER_UID : -1);
        const seen = await runDoors(planted, { SKILL_MCP_NAMESPACES: mode }, asUser);
        const what = `SKILL_MCP_NAMESPACES=${mode}: ${JSON.stringify(seen)}`;
        for (const name of Object.keys(planted.sockets))
          assert.equal(seen[`socket:${name}`], 'ENOENT', `${name}, ${what}`);
        assert.equal(seen.dgram, 'ENOENT', what);
        // The declared network mode (the default) gives the run a network namespace of
        // its own, where no abstract socket of the host's exists.
        assert.equal(seen.abstract, 'ECONNREFUSED', what);
        for (const op of ['chmodOutside', 'utimesOutside', 'xattrOutside', 'chmodBundle',
                          'utimesBundle', 'xattrBundle'])
          assert.equal(seen[op], 'EROFS', `${op}, ${what}`);
        // The positive controls, in the same run: what is the run's own still works.
        assert.equal(seen.ownSocket, 'connected', what);
        assert.equal(seen.pipe, 'changed', what);
        assert.equal(seen.dataWrite, 'changed', `MCP_DATA_DIR under /tmp, ${what}`);
        assert.equal(seen.dataChmod, 'changed', what);
        // Its System V segment lived in its own IPC namespace, gone with it.
        assert.match(seen.sysv, /^\d+$/, what);
        assert.deepEqual(hostSegments(seen.uid).filter((id) => !before.includes(id)), []);
      }
      // With the host's network, Landlock ABI 6 scopes abstract sockets to the run (EPERM),
      // or the fence refuses the socket itself where the ABI is older.
      const shared = await runDoors(planted, { SKILL_MCP_NAMESPACES: 'auto', SKILL_MCP_NETWORK: 'on' }, asUser);
      assert.equal(shared.abstract, 'EPERM', JSON.stringify(shared));
      assert.equal(shared.ownSocket, 'connected', JSON.stringify(shared));
    });

    test('namespaces on, Landlock off: the view hides the places, seccomp refuses unix sockets', async (t) => {
      const report = doctor(planted, { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: 'off' }, asUser);
      if (!/run-namespaces: on/.test(report)) return t.skip('the run namespaces are off here');
      if (!/fresh-proc: on/.test(report)) return t.skip('no fresh /proc here: the no-view fence applies (next test)');
      assert.match(report, /private-view: on/);
      assert.match(report, /unix-sockets-fenced: on\n\s+runs cannot create unix sockets.*abstract/);
      const seen = await runDoors(planted, { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: 'off' }, asUser);
      const what = JSON.stringify(seen);
      for (const name of Object.keys(planted.sockets))
        assert.equal(seen[`socket:${name}`], 'EPERM', `${name}: ${what}`);
      for (const op of ['abstract', 'dgram', 'ownSocket']) assert.equal(seen[op], 'EPERM', `${op}: ${what}`);
      for (const op of ['chmodOutside', 'xattrOutside', 'chmodBundle'])
        assert.equal(seen[op], 'EROFS', `${op}: ${what}`);
      // The positive controls: node's pipes, and metadata in the run's own places (only the
      // unix sockets are fenced here; the view closes the rest).
      assert.equal(seen.pipe, 'changed', what);
      assert.equal(seen.dataChmod, 'changed', what);
    });

    test('namespaces off: seccomp refuses unix sockets, metadata changes and System V IPC', async () => {
      const report = doctor(planted, { SKILL_MCP_NAMESPACES: 'off' }, asUser);
      assert.match(report, /private-view: off/);
      assert.match(report, /unix-sockets-fenced: on\n\s+runs cannot create unix sockets/);
      assert.match(report, /metadata-fenced: on/);
      assert.match(report, /host-ipc-fenced: on/);
      const seen = await runDoors(planted, { SKILL_MCP_NAMESPACES: 'off' }, asUser);
      for (const name of Object.keys(planted.sockets))
        assert.equal(seen[`socket:${name}`], 'EPERM', `${name}: ${JSON.stringify(seen)}`);
      assert.equal(seen.ownSocket, 'EPERM', 'no unix socket at all without a view');
      assert.equal(seen.dgram, 'EPERM', JSON.stringify(seen));
      assert.equal(seen.abstract, 'EPERM', JSON.stringify(seen));
      for (const op of ['chmodOutside', 'utimesOutside', 'xattrOutside', 'chmodBundle',
                        'utimesBundle', 'xattrBundle', 'dataChmod'])
        assert.equal(seen[op], 'EPERM', `${op}: ${JSON.stringify(seen)}`);
      assert.equal(seen.sysv, 'EPERM', JSON.stringify(seen));
      // The positive controls: node's own pipes (socketpair) and writing MCP_DATA_DIR.
      assert.equal(seen.pipe, 'changed', JSON.stringify(seen));
      assert.equal(seen.dataWrite, 'changed', JSON.stringify(seen));
    });

    test('with neither namespaces nor seccomp, doctor and the boot line say runs reach the sockets', () => {
      const report = doctor(planted, { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_SECCOMP: 'off' }, asUser);
      assert.match(report, /unix-sockets-fenced: off\n\s+warning: runs can reach the user's sockets/);
      assert.match(report, /metadata-fenced: off/);
      assert.match(report, /host-ipc-fenced: off/);
    });
  });
}

describe('a HOME that holds the system', () => {
  test('a broker whose HOME is "/" still starts runs: the system is never covered', async (t) => {
    if (!IS_ROOT) return t.skip('planting needs root');
    const planted = await plant(undefined);
    try {
      const report = doctor(planted, { HOME: '/' }, false);
      if (!/run-namespaces: on/.test(report)) return t.skip('the run namespaces are off here');
      assert.doesNotMatch(/private-view: on\n\s+(.*)/.exec(report)[1], /hides \/[ ,]/);
      const seen = await runDoors(planted, { HOME: '/', SKILL_MCP_NAMESPACES: 'on' }, false);
      assert.equal(seen.pipe, 'changed', JSON.stringify(seen));
      assert.equal(seen['socket:run'], 'ENOENT', JSON.stringify(seen));
    } finally {
      planted.cleanup();
    }
  });
});
