// What a run sees and reaches in the cell (docs/isolation.md, "The filesystem
// allowlist" and "Layers and what each stops"), with the real broker, worker and node:
// - the securebits are locked in a namespaced run (the user namespace resets them);
// - the node_modules beside and inside a skills root load with the namespaced view and
//   Landlock on, for roots under /tmp and outside it, while another skill stays hidden;
// - the operator's /etc/skill-mcp and systemd's credstore{,.encrypted} of /etc, /run and
//   /usr/lib stay out of reach whatever the file's mode;
// - an abstract unix socket made outside the run cannot be reached (Landlock ABI 6);
// - under the default cell (Landlock and namespaces auto), what a run leaves in /dev/shm
//   or /var/tmp is not read by a later run of another skill;
// - the environ/kill attack of run_identity.test.mjs, with Landlock on.
// Each case runs with the broker as root and as uid 65534 (setpriv) when the test is root,
// and each has a control with the layer off showing what it stops.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync,
         rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { launcher, rpcOver, runForJson, serverEnv, sleep } from './lib.mjs';

// Runs the operations named in argv[2]: {key: [op, arg]}; prints {key: outcome}.
const PROBE_JS = `'use strict';
const fs = require('node:fs');
const net = require('node:net');
const ops = JSON.parse(process.argv[2]);
const tryRead = (f) => { try { fs.readFileSync(f); return 'read'; } catch (e) { return e.code; } };
const tryWrite = (f) => { try { fs.writeFileSync(f, 'left by a run'); return 'written'; } catch (e) { return e.code; } };
const tryRequire = (m) => { try { return require(m)(); } catch (e) { return e.code; } };
const securebits = (capsh) => {
  try {
    const out = require('node:child_process').execFileSync(capsh, ['--print'], { encoding: 'utf8' });
    return /Securebits: [^/ ]+[/](0x[0-9a-f]+)[/]/.exec(out)?.[1] ?? out;
  } catch (e) { return e.code ?? String(e); }
};
const tryConnect = (name) => new Promise((resolve) => {
  const s = net.connect({ path: '\\0' + name });
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
});
(async () => {
  const out = { uid: process.getuid() };
  for (const [key, [op, arg]] of Object.entries(ops)) {
    out[key] = op === 'read' ? tryRead(arg) : op === 'write' ? tryWrite(arg)
      : op === 'require' ? tryRequire(arg) : op === 'abstract' ? await tryConnect(arg)
      : op === 'securebits' ? securebits(arg) : 'bad op';
  }
  console.log(JSON.stringify(out));
})();
`;

// The environ/kill attack (run_identity.test.mjs): the victim holds a granted secret and
// waits, carrying argv[2] so the test finds its host pid; the attacker tries argv[2].
const VICTIM_JS = "setInterval(() => {}, 1000);\n";
const SECRET = 'the-victims-granted-secret-4be2';
const ATTACK_JS = `'use strict';
const fs = require('node:fs');
const pid = Number(process.argv[2]);
const out = { uid: process.getuid() };
try { out.environ = fs.readFileSync('/proc/' + pid + '/environ', 'latin1').includes('${SECRET}') ? 'read' : 'no-secret'; }
catch (e) { out.environ = e.code; }
try { process.kill(pid, 'SIGKILL'); out.kill = 'sent'; } catch (e) { out.kill = e.code; }
console.log(JSON.stringify(out));
`;

const IS_ROOT = process.getuid() === 0;
// The operator's directories no run may read (worker/operator_dirs.cc), with this build's
// <sysconfdir>/skill-mcp (/usr/local/etc/skill-mcp with meson's default prefix).
const OPERATOR_DIRS = ['/etc/skill-mcp', '/etc/credstore', '/etc/credstore.encrypted', '/run/credstore',
                       '/run/credstore.encrypted', '/usr/lib/credstore', '/usr/lib/credstore.encrypted'];
const SYSCONFDIR = process.env.SKILL_MCP_TEST_SYSCONFDIR;
if (SYSCONFDIR && !OPERATOR_DIRS.includes(join(SYSCONFDIR, 'skill-mcp'))) OPERATOR_DIRS.push(join(SYSCONFDIR, 'skill-mcp'));
const SERVICE_UID = 64111;
const RUN_AS_UID = 64110;

// A skills tree under `parent`: <base>/skills/{probe,reader,victim,other}, a node_modules
// beside the root (<base>/node_modules/beside) and one in it (skills/node_modules/inroot).
function plantTree(parent) {
  const base = realpathSync(mkdtempSync(join(parent, 'skill-mcp-views-')));
  const root = join(base, 'skills');
  const skill = (name, runs, extra = '') => {
    const dir = join(root, name);
    mkdirSync(join(dir, 'scripts'), { recursive: true });
    const list = runs.map(([s, env]) => `    - script: scripts/${s}\n      interpreter: node\n` +
      `      timeout: 60\n${env ? `      env: [${env}]\n` : ''}`).join('');
    writeFileSync(join(dir, 'SKILL.md'), skillMd(
      `name: ${name}\ndescription: Tries its view.\nmcp-host:\n  version: 1\n  run:\n${list}`, '\n# V\n'));
    return dir;
  };
  writeFileSync(join(skill('probe', [['probe.js']]), 'scripts', 'probe.js'), PROBE_JS);
  writeFileSync(join(skill('reader', [['probe.js']]), 'scripts', 'probe.js'), PROBE_JS);
  const victim = skill('victim', [['victim.js', 'CELL_SECRET'], ['attack.js']]);
  writeFileSync(join(victim, 'scripts', 'victim.js'), VICTIM_JS);
  writeFileSync(join(victim, 'scripts', 'attack.js'), ATTACK_JS);
  const other = join(root, 'other');
  mkdirSync(other);
  writeFileSync(join(other, 'SKILL.md'), skillMd('name: other\ndescription: Another.', '\n# Other\n'));
  writeFileSync(join(other, 'notes.md'), 'not for the probe skill\n');
  for (const [dir, name] of [[join(base, 'node_modules', 'beside'), 'beside'],
                             [join(root, 'node_modules', 'inroot'), 'inroot']]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.js'), `module.exports = () => '${name}';\n`);
  }
  // Every uid may read all of it: only the cell can hide any of it.
  spawnSync('chmod', ['-R', 'a+rX', base]);
  return { base, root, otherNotes: join(other, 'notes.md') };
}

let tmpParent, inTmp, outsideTmp;
before(() => {
  tmpParent = freshDir('skill-mcp-views-');
  inTmp = plantTree(tmpParent);
  outsideTmp = plantTree('/var/tmp');
});
after(() => {
  if (tmpParent) removeDir(tmpParent);
  if (outsideTmp) removeDir(outsideTmp.base);
});

function runProbe(tree, env, ops, { asUser = false, skill = 'probe' } = {}) {
  return runForJson({ env: { SKILLS_DIR: tree.root, MCP_CONFIRM_MODE: 'auto', ...env }, ...launcher(asUser) },
                    { name: skill, script: 'scripts/probe.js', args: [JSON.stringify(ops)] });
}

function doctor(env, asUser = false) {
  const { command, args } = launcher(asUser);
  return spawnSync(command, [...args, 'doctor'],
                   { env: serverEnv({ SKILLS_DIR: inTmp.root, ...env }), encoding: 'utf8' }).stdout;
}
// Landlock's ABI on this host (0: off, with the reason), and whether the run namespaces work.
function landlockHere(asUser = false) {
  const out = doctor({ SKILL_MCP_LANDLOCK: 'auto' }, asUser);
  const abi = /landlock: on\n\s+Landlock ABI (\d+)/.exec(out);
  return abi ? { abi: Number(abi[1]) } : { abi: 0, why: /landlock: off\n\s+(.*)/.exec(out)?.[1] ?? out };
}
const namespacesHere = (asUser = false) =>
  /run-namespaces: on/.test(doctor({ SKILL_MCP_NAMESPACES: 'auto' }, asUser));

const modes = IS_ROOT ? [['as root', false], ['as an ordinary user (setpriv 65534)', true]]
                      : [['as this ordinary user', false]];

for (const [label, asUser] of modes) {
  describe(`node_modules in the namespaced view, ${label}`, () => {
    for (const [where, tree] of [['a skills root under /tmp', () => inTmp],
                                 ['a skills root outside /tmp', () => outsideTmp]]) {
      test(`${where}: beside and in the root load; another skill stays hidden`, async (t) => {
        if (!namespacesHere(asUser)) return t.skip('this host refuses the run namespaces (doctor says why)');
        const { abi } = landlockHere(asUser);
        const ops = { beside: ['require', 'beside'], inroot: ['require', 'inroot'],
                      other: ['read', tree().otherNotes] };
        for (const landlock of abi ? ['auto', 'off'] : ['off']) {
          const seen = await runProbe(tree(), { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: landlock },
                                      ops, { asUser });
          assert.equal(seen.beside, 'beside', `Landlock ${landlock}: ${JSON.stringify(seen)}`);
          assert.equal(seen.inroot, 'inroot', `Landlock ${landlock}: ${JSON.stringify(seen)}`);
          assert.equal(seen.other, 'ENOENT', `Landlock ${landlock}: another skill is covered`);
        }
        // Control: without the view the other skill is there (Landlock off too).
        const open = await runProbe(tree(), { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_LANDLOCK: 'off' },
                                    ops, { asUser });
        assert.deepEqual([open.beside, open.inroot, open.other], ['beside', 'inroot', 'read']);
      });
    }
  });

  describe(`securebits, ${label}`, () => {
    // A new user namespace resets them: the worker locks them again inside it.
    test('locked in a namespaced run; without namespaces wherever the broker has CAP_SETPCAP', async (t) => {
      const capsh = ['/usr/sbin/capsh', '/sbin/capsh', '/usr/bin/capsh'].find((p) => existsSync(p));
      if (!capsh) return t.skip('capsh (libcap2-bin) is not installed');
      const ops = { bits: ['securebits', capsh] };
      if (namespacesHere(asUser)) {
        const ns = await runProbe(inTmp, { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: 'auto' }, ops, { asUser });
        assert.equal(ns.bits, '0xef', `namespaces on: ${JSON.stringify(ns)}`);
      } else {
        t.diagnostic('this host refuses the run namespaces: only the case without them runs');
      }
      const plain = await runProbe(inTmp, { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_LANDLOCK: 'auto' }, ops, { asUser });
      // An ordinary user's broker holds no CAP_SETPCAP: outside a user namespace nothing
      // can lock them (docs/isolation.md, "The broker").
      assert.equal(plain.bits, asUser || !IS_ROOT ? '0x0' : '0xef', `namespaces off: ${JSON.stringify(plain)}`);
    });
  });

  describe(`the operator's directories (${OPERATOR_DIRS.join(', ')}), ${label}`, () => {
    test('a run cannot read a file planted in any of them, in every mode with Landlock or namespaces', async (t) => {
      if (!IS_ROOT) return t.skip(`planting files in ${OPERATOR_DIRS.join(', ')} needs root`);
      if (!SYSCONFDIR) t.diagnostic('SKILL_MCP_TEST_SYSCONFDIR is not set (run through meson): only the /etc directories');
      const planted = {};
      const made = [];  // what was missing of each path, removed afterwards (deepest first)
      for (const dir of OPERATOR_DIRS) {
        const parts = dir.split('/').slice(1);
        for (let i = 1; i <= parts.length; i++) {
          const p = '/' + parts.slice(0, i).join('/');
          if (!existsSync(p)) { mkdirSync(p, { mode: 0o755 }); made.push(p); }
        }
        planted[dir] = join(dir, `views-test.${process.pid}`);
        writeFileSync(planted[dir], 'SKILL_MCP_SECRET=planted\n');
        chmodSync(planted[dir], 0o644);  // readable by anyone: only the cell keeps the run out
      }
      try {
        const ops = { hostname: ['read', '/etc/hostname'] };
        for (const dir of OPERATOR_DIRS) ops[dir] = ['read', planted[dir]];
        const { abi } = landlockHere(asUser);
        const ns = namespacesHere(asUser);
        const cases = [];
        if (abi) cases.push({ SKILL_MCP_LANDLOCK: 'auto', SKILL_MCP_NAMESPACES: 'off' });
        if (ns) cases.push({ SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_NAMESPACES: 'on' });
        if (abi && ns) cases.push({ SKILL_MCP_LANDLOCK: 'auto', SKILL_MCP_NAMESPACES: 'on' });
        if (!cases.length) return t.skip('neither Landlock nor the run namespaces work here');
        for (const env of cases) {
          const seen = await runProbe(inTmp, env, ops, { asUser });
          for (const dir of OPERATOR_DIRS)
            assert.notEqual(seen[dir], 'read', `${dir}, ${JSON.stringify(env)}: ${JSON.stringify(seen)}`);
          assert.equal(seen.hostname, existsSync('/etc/hostname') ? 'read' : 'ENOENT',
                       `${JSON.stringify(env)}: the rest of /etc`);
        }
        const control = await runProbe(inTmp, { SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_NAMESPACES: 'off' },
                                       ops, { asUser });
        for (const dir of OPERATOR_DIRS)
          assert.equal(control[dir], 'read', `control: both layers off, ${dir}`);
      } finally {
        for (const file of Object.values(planted)) rmSync(file, { force: true });
        for (const dir of made.reverse()) rmdirSync(dir);
      }
    });
  });

  describe(`abstract unix sockets, ${label}`, () => {
    test('a run cannot connect to one made outside it (Landlock ABI 6 scoping)', async (t) => {
      const { abi, why } = landlockHere(asUser);
      if (abi < 6) return t.skip(`abstract socket scoping needs Landlock ABI 6: ${abi ? `this kernel has ${abi}` : why}`);
      const name = `skill-mcp-views-${process.pid}`;
      const server = createServer((s) => s.destroy());
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen('\0' + name, resolve);
      });
      try {
        const ops = { abstract: ['abstract', name] };
        // The host's network: Landlock's scoping is what this case is about (in the declared
        // mode the run's own network namespace has none of the host's abstract sockets).
        const scoped = await runProbe(inTmp, { SKILL_MCP_LANDLOCK: 'auto', SKILL_MCP_NETWORK: 'on' },
                                      ops, { asUser });
        assert.equal(scoped.abstract, 'EPERM', JSON.stringify(scoped));
        const own = await runProbe(inTmp, { SKILL_MCP_LANDLOCK: 'auto' }, ops, { asUser });
        assert.equal(own.abstract, 'ECONNREFUSED', JSON.stringify(own));
        // Control: Landlock off, and the seccomp filter too, whose unix socket fence takes
        // over where Landlock does not scope abstract sockets (doors.test.mjs).
        const control = await runProbe(inTmp, { SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_SECCOMP: 'off',
                                                SKILL_MCP_NETWORK: 'on' }, ops, { asUser });
        assert.equal(control.abstract, 'connected', 'control: Landlock and seccomp off');
      } finally {
        server.close();
      }
    });
  });

  describe(`the default cell, ${label}`, () => {
    test('what a run leaves in /dev/shm and /var/tmp is not read by a later run of another skill', async (t) => {
      const { abi, why } = landlockHere(asUser);
      if (!abi) return t.skip(`the default cell has no Landlock here: ${why}`);
      if (!namespacesHere(asUser)) return t.skip('this host refuses the run namespaces (doctor says why)');
      const shm = `/dev/shm/skill-mcp-views-${process.pid}-${asUser ? 'u' : 'r'}`;
      const varTmp = `/var/tmp/skill-mcp-views-${process.pid}-${asUser ? 'u' : 'r'}`;
      const clean = () => { for (const f of [shm, varTmp]) rmSync(f, { force: true }); };
      const leave = { shm: ['write', shm], varTmp: ['write', varTmp] };
      const find = { shm: ['read', shm], varTmp: ['read', varTmp] };
      // No SKILL_MCP_LANDLOCK or SKILL_MCP_NAMESPACES: the defaults (auto), not lib's off.
      const cell = { SKILL_MCP_LANDLOCK: undefined, SKILL_MCP_NAMESPACES: undefined };
      try {
        const wrote = await runProbe(inTmp, cell, leave, { asUser });
        // /dev/shm is the run's own, where Landlock grants nothing; /var/tmp is an empty
        // read-only cover in the view (docs/isolation.md, "Doors out of the cell").
        assert.deepEqual([wrote.shm, wrote.varTmp], ['EACCES', 'EROFS'], JSON.stringify(wrote));
        assert.equal(existsSync(shm) || existsSync(varTmp), false, 'nothing reached the host');
        const found = await runProbe(inTmp, cell, find, { asUser, skill: 'reader' });
        assert.notEqual(found.shm, 'read', JSON.stringify(found));
        assert.notEqual(found.varTmp, 'read', JSON.stringify(found));
        clean();
        // Control: with both layers off the same two runs share those files.
        const off = { SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_NAMESPACES: 'off' };
        const left = await runProbe(inTmp, off, leave, { asUser });
        assert.deepEqual([left.shm, left.varTmp], ['written', 'written'], JSON.stringify(left));
        const read = await runProbe(inTmp, off, find, { asUser, skill: 'reader' });
        assert.deepEqual([read.shm, read.varTmp], ['read', 'read'], JSON.stringify(read));
      } finally {
        clean();
      }
    });
  });
}

// ---- the environ/kill attack with Landlock on (run_identity.test.mjs without it) ----------

function startBroker(tree, asUser, extra) {
  const { command, args } = launcher(asUser);
  const env = serverEnv({ SKILLS_DIR: tree.root, MCP_CONFIRM_MODE: 'auto', CELL_SECRET: SECRET,
                          SKILL_MCP_NAMESPACES: 'off', ...extra });
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const { send, answer } = rpcOver(child, 30000);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const b = {
    async init() {
      await answer(send('initialize', { protocolVersion: '2025-06-18', capabilities: {},
                                        clientInfo: { name: 'views', version: '1' } }));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    },
    async start(script, args) {
      const a = { name: 'victim', script: `scripts/${script}`, args };
      const first = await answer(send('tools/call', { name: 'skill_run', arguments: a }));
      const token = JSON.parse(first.result.content[0].text).confirmToken;
      assert.ok(token, JSON.stringify(first));
      return send('tools/call', { name: 'skill_run', arguments: { ...a, confirmToken: token } });
    },
    async run(script, args) {
      const r = (await answer(await b.start(script, args))).result;
      assert.notEqual(r.isError, true, JSON.stringify(r));
      return JSON.parse(JSON.parse(r.content[0].text).stdout);
    },
    async close() {
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
  return b;
}

async function hostPidOf(token) {
  for (let i = 0; i < 400; i++) {
    const r = spawnSync('pgrep', ['-f', '--', token], { encoding: 'utf8' });
    const pids = r.stdout.trim().split('\n').filter(Boolean).map(Number);
    if (pids.length === 1) return pids[0];
    await sleep(50);
  }
  assert.fail(`no single process carries ${token}`);
}

let attackSeq = 0;
async function attack(asUser, extra) {
  const a = startBroker(inTmp, asUser, extra), b = startBroker(inTmp, asUser, extra);
  try {
    await Promise.all([a.init(), b.init()]);
    const token = `views-victim-${process.pid}-${++attackSeq}`;
    b.start('victim.js', [token]);  // ends when its broker closes
    const pid = await hostPidOf(token);
    const uid = victimUid(pid);
    const got = await a.run('attack.js', [String(pid)]);
    return { got, alive: existsSync(`/proc/${pid}`), victimUid: uid };
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}
const victimUid = (pid) => Number(/Uid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

const attackModes = IS_ROOT
  ? [['two root brokers, each run its own uid', false, 'own'],
     ['two root brokers sharing the run-as uid', false, 'shared'],
     ['two brokers of one ordinary user (setpriv 65534)', true, 'shared']]
  : [['two brokers of this ordinary user', false, 'shared']];

describe('the environ/kill attack with Landlock on (namespaces off)', () => {
  let state;
  before(() => {
    state = join(inTmp.base, 'state');
    mkdirSync(state, { mode: 0o700 });
    if (IS_ROOT) chownSync(state, SERVICE_UID, SERVICE_UID);
  });
  for (const [label, asUser, uids] of attackModes) {
    test(label, async (t) => {
      const { abi, why } = landlockHere(asUser);
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const ids = asUser || !IS_ROOT ? {}
        : { SKILL_MCP_USER: String(SERVICE_UID), SKILL_MCP_RUN_AS: String(RUN_AS_UID),
            ...(uids === 'own' ? { SKILL_MCP_STATE_DIR: state } : { SKILL_MCP_RUN_UIDS: 'off' }) };
      const on = await attack(asUser, { ...ids, SKILL_MCP_LANDLOCK: 'auto' });
      if (uids === 'own') assert.notEqual(on.got.uid, on.victimUid, 'two runs, two uids');
      else assert.equal(on.got.uid, on.victimUid, 'one uid for both runs');
      // Landlock refuses ptrace-mode access (environ, mem) to a process outside the
      // run's own domain, and from ABI 6 scopes its signals, even under the same uid.
      assert.equal(on.got.environ, 'EACCES', JSON.stringify(on.got));
      if (abi >= 6 || uids === 'own') assert.equal(on.got.kill, 'EPERM', JSON.stringify(on.got));
      assert.equal(on.alive, true, 'the victim still ran after the attack');
      if (uids === 'own') return;  // the control for own uids is run_identity.test.mjs
      const off = await attack(asUser, { ...ids, SKILL_MCP_LANDLOCK: 'off' });
      assert.equal(off.got.environ, 'read', `control: Landlock off, same uid: ${JSON.stringify(off.got)}`);
      assert.equal(off.got.kill, 'sent', 'control: Landlock off, same uid');
    });
  }
});
