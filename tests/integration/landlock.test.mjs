// The Landlock filesystem allowlist and the scratch TMPDIR (docs/isolation.md, "The
// filesystem allowlist"): a real broker, the real worker and node on this kernel, started
// as root (the worker switches to the run-as user) and as an ordinary user through
// setpriv (same uid as the broker). Each rule is checked with the allowlist on and
// against the same script with SKILL_MCP_LANDLOCK=off (the control), so every assertion
// can fail. A kernel without Landlock skips with the reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, launcher, runForJson, serverEnv } from './lib.mjs';

const PROBE_JS = `'use strict';
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const path = require('node:path');
const p = JSON.parse(process.argv[2]);
const tryRead = (f) => { try { fs.readFileSync(f); return 'read'; } catch (e) { return e.code; } };
const tryWrite = (f) => { try { fs.writeFileSync(f, 'x'); return 'written'; } catch (e) { return e.code; } };
const tryKill = (pid) => { try { process.kill(pid, 0); return 'signalled'; } catch (e) { return e.code; } };
const tryRequire = (m) => { try { return require(m)(); } catch (e) { return e.code; } };
const tmp = process.env.TMPDIR;
const st = fs.statSync(tmp);
// What a hostile script leaves in its TMPDIR: a link out, odd names, a deep tree.
fs.writeFileSync(path.join(tmp, 'file'), 'x');
fs.symlinkSync(p.secret, path.join(tmp, 'link-out'));
fs.writeFileSync(path.join(tmp, 'new\\nline'), 'x');
let deep = tmp;
for (let i = 0; i < 150; i++) { deep = path.join(deep, 'd'); fs.mkdirSync(deep); }
fs.writeFileSync(path.join(deep, 'bottom'), 'x');
const tcp = () => new Promise((resolve) => {
  const s = net.connect(p.port, '127.0.0.1');
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
});
(async () => {
  console.log(JSON.stringify({
    uid: process.getuid(),
    home: tryRead(p.home),
    secret: tryRead(p.secret),
    otherSkill: tryRead(p.otherSkill),
    ownBundle: tryWrite(p.ownFile),
    ownNew: tryWrite(p.ownNew),
    otherBundle: tryWrite(p.otherSkill),
    varTmp: tryRead(p.varTmp),
    shm: tryRead(p.shm),
    hostTmp: tryWrite(p.hostTmp),
    killBroker: tryKill(process.ppid),
    tmpdir: tmp,
    tmpMode: (st.mode & 0o7777).toString(8),
    tmpOwned: st.uid === process.getuid(),
    data: p.data ? tryWrite(path.join(p.data, 'out-' + process.getuid())) : null,
    beside: tryRequire('beside'),
    inRoot: tryRequire('inroot'),
    https: typeof require('https').request,
    cpus: os.cpus().length,
    date: new Date(0).toISOString(),
    year: new Intl.DateTimeFormat('en', { timeZone: 'UTC', year: 'numeric' }).format(new Date(0)),
    tcp: await tcp(),
  }));
})();
`;

// ESM: the loader reads the module graph on its own thread.
const PROBE_MJS = `import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import https from 'node:https';
import { helper } from './helper.mjs';
writeFileSync(join(process.env.TMPDIR, 'esm'), 'x');
let secret;
try { readFileSync(process.argv[2]); secret = 'read'; } catch (e) { secret = e.code; }
console.log(JSON.stringify({ helper: helper(), https: typeof https.request, secret }));
`;

const IS_ROOT = process.getuid() === 0;
let base, root, paths, server, port;

function plant() {
  base = freshDir('skill-mcp-landlock-');
  root = join(base, 'skills');
  const probe = join(root, 'probe');
  mkdirSync(join(probe, 'scripts'), { recursive: true });
  writeFileSync(join(probe, 'SKILL.md'), skillMd(
    'name: probe\ndescription: Tries its cell.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/probe.js\n      interpreter: node\n' +
    '    - script: scripts/probe.mjs\n      interpreter: node\n', '\n# Probe\n'));
  writeFileSync(join(probe, 'scripts', 'probe.js'), PROBE_JS);
  writeFileSync(join(probe, 'scripts', 'probe.mjs'), PROBE_MJS);
  writeFileSync(join(probe, 'scripts', 'helper.mjs'), "export const helper = () => 'imported';\n");
  const other = join(root, 'other');
  mkdirSync(other);
  writeFileSync(join(other, 'SKILL.md'), skillMd('name: other\ndescription: Another.', '\n# Other\n'));
  writeFileSync(join(other, 'notes.md'), 'not for the probe skill\n');
  // node_modules beside the skills root and in it (docs/isolation.md).
  for (const [dir, name] of [[join(base, 'node_modules', 'beside'), 'beside'],
                             [join(root, 'node_modules', 'inroot'), 'inroot']]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.js'), `module.exports = () => '${name}';\n`);
  }
  const home = join(base, 'home');
  mkdirSync(home);
  writeFileSync(join(home, '.netrc'), 'machine example.com password hunter2\n');
  writeFileSync(join(base, 'secrets.env'), 'API_KEY=operator-secret\n');
  const data = join(base, 'data');
  mkdirSync(data);
  const varTmp = realpathSync(mkdtempSync('/var/tmp/skill-mcp-landlock-'));
  writeFileSync(join(varTmp, 'left'), 'left by another run');
  const shm = `/dev/shm/skill-mcp-landlock-${process.pid}`;
  writeFileSync(shm, 'left by another run');
  // Whatever the run's uid, plain permissions allow every one of these: only the
  // allowlist can refuse them.
  for (const d of [base, root, home, varTmp, join(base, 'node_modules'), join(root, 'node_modules')])
    chmodSync(d, 0o755);
  for (const d of [probe, join(probe, 'scripts'), other, data]) chmodSync(d, 0o777);
  for (const f of [join(probe, 'scripts', 'probe.js'), join(other, 'notes.md')]) chmodSync(f, 0o666);
  for (const f of [join(home, '.netrc'), join(base, 'secrets.env'), join(varTmp, 'left'), shm])
    chmodSync(f, 0o644);
  paths = {
    home: join(home, '.netrc'),
    secret: join(base, 'secrets.env'),
    otherSkill: join(other, 'notes.md'),
    ownFile: join(probe, 'scripts', 'probe.js'),
    ownNew: join(probe, 'planted.js'),
    varTmp: join(varTmp, 'left'),
    shm,
    hostTmp: join(base, 'planted'),
    data,
    varTmpDir: varTmp,
  };
}

before(async () => {
  plant();
  server = createServer((s) => s.destroy());
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = server.address().port;
});
after(() => {
  server?.close();
  removeDir(base);
  if (paths?.varTmpDir) removeDir(paths.varTmpDir);
  if (paths?.shm) rmSync(paths.shm, { force: true });
});

function run(env, { asUser = false, script = 'scripts/probe.js', args, command } = {}) {
  return runForJson({
    // The fixtures live in the host's /tmp, which a namespaced run does not see: the
    // namespaces are off unless a case turns them on (the combined case does).
    // The host's network too (its loopback listener is the TCP probe's target): the
    // network modes have their own cases below and in egress.test.mjs.
    env: { SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_LANDLOCK: 'auto',
           SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_NETWORK: 'on', ...env },
    ...(command ? { command, args: [BIN] } : launcher(asUser)),
  }, { name: 'probe', script, args: args ?? [JSON.stringify({ ...paths, port })] });
}

function doctor(env, asUser = false) {
  const { command, args } = launcher(asUser);
  return spawnSync(command, [...args, 'doctor'],
                   { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_LANDLOCK: 'auto', ...env }), encoding: 'utf8' });
}

// The ABI this host's broker found, or 0 with the doctor's reason.
function landlockHere() {
  const out = doctor({}).stdout;
  const abi = /landlock: on\n\s+Landlock ABI (\d+)/.exec(out);
  return abi ? { abi: Number(abi[1]) } : { abi: 0, why: /landlock: off\n\s+(.*)/.exec(out)?.[1] ?? out };
}

const modes = IS_ROOT ? [['as root', false], ['as an ordinary user (setpriv 65534)', true]]
                      : [['as this ordinary user', false]];

for (const [label, asUser] of modes) {
  describe(`Landlock ${label}`, () => {
    test('the script reaches only its allowlist; node still works', async (t) => {
      const { abi, why } = landlockHere();
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const seen = await run({}, { asUser });
      if (asUser) assert.equal(seen.uid, 65534);
      assert.equal(seen.home, 'EACCES', "a file in the user's home");
      assert.equal(seen.secret, 'EACCES', 'a secrets file beside the skills root');
      assert.equal(seen.otherSkill, 'EACCES', "another skill's file");
      assert.equal(seen.ownBundle, 'EACCES', 'its own bundle is read-only');
      assert.equal(seen.ownNew, 'EACCES', 'nothing can be added to its own bundle');
      assert.equal(seen.otherBundle, 'EACCES', "another skill's bundle");
      assert.equal(seen.varTmp, 'EACCES', '/var/tmp');
      assert.equal(seen.shm, 'EACCES', '/dev/shm');
      assert.equal(seen.hostTmp, 'EACCES', 'the directory holding the skills');
      assert.equal(seen.beside, 'beside', 'node_modules beside the skills root');
      assert.equal(seen.inRoot, 'inroot', 'node_modules in the skills root');
      assert.equal(seen.https, 'function', "require('https')");
      assert.ok(seen.cpus > 0, 'os.cpus()');
      assert.equal(seen.date, '1970-01-01T00:00:00.000Z');
      assert.equal(seen.year, '1970');
      assert.equal(seen.tcp, 'connected', 'TCP is allowed by default');
      if (abi >= 6) assert.equal(seen.killBroker, 'EPERM', 'the broker cannot be signalled');
    });

    test('TMPDIR is private, writable, and gone after the run with all it held', async (t) => {
      const { abi, why } = landlockHere();
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const one = await run({}, { asUser });
      assert.equal(one.tmpMode, '700');
      assert.equal(one.tmpOwned, true, "owned by the run's uid");
      assert.match(one.tmpdir, /\/skill-mcp-run\.[A-Za-z0-9]{6}$/);
      assert.equal(existsSync(one.tmpdir), false, 'removed after the run');
      assert.equal(existsSync(paths.secret), true, 'the link out was not followed');
      const two = await run({}, { asUser });
      assert.notEqual(two.tmpdir, one.tmpdir, 'each run has its own');
    });

    test('MCP_DATA_DIR is writable', async (t) => {
      const { abi, why } = landlockHere();
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const grant = JSON.stringify([{ skill: 'probe', script: 'scripts/probe.js' }]);
      const seen = await run({ MCP_DATA_DIR: paths.data, MCP_SKILL_RUN: grant }, { asUser });
      assert.equal(seen.data, 'written');
      assert.equal(seen.secret, 'EACCES');
    });

    test('an ESM script runs (the loader thread reads its graph)', async (t) => {
      const { abi, why } = landlockHere();
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const seen = await run({}, { asUser, script: 'scripts/probe.mjs', args: [paths.secret] });
      assert.deepEqual(seen, { helper: 'imported', https: 'function', secret: 'EACCES' });
    });

    test('SKILL_MCP_NETWORK=off: the seccomp fence refuses the socket itself', async () => {
      const seen = await run({ SKILL_MCP_NETWORK: 'off' }, { asUser });
      assert.equal(seen.tcp, 'EPERM');
      assert.equal(seen.https, 'function');
    });

    test('SKILL_MCP_NETWORK=off without the seccomp filter: Landlock refuses the TCP connect', async (t) => {
      const { abi, why } = landlockHere();
      if (abi < 4) return t.skip(`needs Landlock ABI 4: ${abi ? `this kernel has ${abi}` : why}`);
      const seen = await run({ SKILL_MCP_NETWORK: 'off', SKILL_MCP_SECCOMP: 'off' }, { asUser });
      assert.equal(seen.tcp, 'EACCES');
    });

    test('with SKILL_MCP_NAMESPACES=on as well: TMPDIR is bound into the view', async (t) => {
      const { abi, why } = landlockHere();
      if (!abi) return t.skip(`no Landlock here: ${why}`);
      const seen = await run({ SKILL_MCP_NAMESPACES: 'on' }, { asUser });
      assert.equal(seen.tmpMode, '700');
      assert.equal(seen.tmpOwned, true);
      assert.equal(existsSync(seen.tmpdir), false, 'removed after the run');
      assert.equal(seen.varTmp, 'ENOENT', '/var/tmp, which the view hides (docs/isolation.md)');
      assert.notEqual(seen.secret, 'read');
      // The view binds the skill back read-only, which refuses before Landlock does.
      assert.equal(seen.ownBundle, 'EROFS');
      assert.equal(seen.https, 'function');
      assert.equal(seen.tcp, 'connected');
    });

    test('control: with SKILL_MCP_LANDLOCK=off the same script reaches all of it', async () => {
      let seen;
      try {
        seen = await run({ SKILL_MCP_LANDLOCK: 'off' }, { asUser });
      } finally {
        writeFileSync(paths.ownFile, PROBE_JS);  // what the control overwrites, for later cases
      }
      assert.equal(seen.home, 'read');
      assert.equal(seen.secret, 'read');
      assert.equal(seen.otherSkill, 'read');
      assert.equal(seen.varTmp, 'read');
      assert.equal(seen.shm, 'read');
      assert.equal(seen.ownBundle, 'written');
      if (asUser) assert.equal(seen.killBroker, 'signalled', 'same uid, no scoping');
      assert.equal(existsSync(seen.tmpdir), false, 'the scratch directory goes all the same');
    });
  });
}

describe('doctor', () => {
  test('reports the Landlock layer with its ABI, or off with the reason, and the network option', (t) => {
    const { abi, why } = landlockHere();
    if (!abi) return t.skip(`no Landlock here: ${why}`);
    const on = doctor({});
    assert.match(on.stdout, new RegExp(`landlock: on\\n\\s+Landlock ABI ${abi}:`));
    assert.match(on.stdout, /network: on\n\s+SKILL_MCP_NETWORK=declared: each run has a network namespace of its own/);
    const host = doctor({ SKILL_MCP_NETWORK: 'on' });
    assert.match(host.stdout, /network: off\n\s+SKILL_MCP_NETWORK=on: runs use the host's network/);
    const off = doctor({ SKILL_MCP_LANDLOCK: 'off' });
    assert.match(off.stdout, /landlock: off\n\s+turned off by SKILL_MCP_LANDLOCK=off/);
    const net = doctor({ SKILL_MCP_NETWORK: 'off' });
    assert.match(net.stdout, /network: on\n\s+SKILL_MCP_NETWORK=off: runs cannot open an IPv4 or IPv6 socket/);
    assert.equal(net.status, on.status);
    // Declared without namespaces falls back to off, never to on.
    const fallback = doctor({ SKILL_MCP_NAMESPACES: 'off' });
    assert.match(fallback.stdout, /network: on\n\s+SKILL_MCP_NETWORK=declared falls back to off, because runs get no namespaces here/);
    // Network off with neither the seccomp filter nor Landlock cannot be kept: runs are
    // refused and doctor fails.
    const refused = doctor({ SKILL_MCP_NETWORK: 'off', SKILL_MCP_LANDLOCK: 'off', SKILL_MCP_SECCOMP: 'off' });
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stdout, /network: off {2}<< required by this configuration/);
    assert.match(refused.stdout, /SKILL_MCP_NETWORK=off needs the seccomp filter/);
  });

  test('Landlock refused to the broker: runs go on without it, off with the reason', async () => {
    const denied = process.env.SKILL_MCP_TEST_LANDLOCK_DENIED;
    assert.ok(denied, 'SKILL_MCP_TEST_LANDLOCK_DENIED names the wrapper (meson sets it)');
    const env = serverEnv({ SKILLS_DIR: root, SKILL_MCP_LANDLOCK: 'auto' });
    const r = spawnSync(denied, [BIN, 'doctor'], { env, encoding: 'utf8' });
    assert.match(r.stdout, /landlock: off\n\s+a system call filter refuses Landlock to the broker/);
    assert.doesNotMatch(r.stdout, /landlock: off {2}<< required/);
    const seen = await run({}, { command: denied });
    assert.equal(seen.secret, 'read', 'no allowlist, as the doctor said');
    assert.equal(existsSync(seen.tmpdir), false, 'the scratch directory all the same');
    const demanded = spawnSync(denied, [BIN, 'doctor'],
                               { env: { ...env, SKILL_MCP_LANDLOCK: 'on' }, encoding: 'utf8' });
    assert.equal(demanded.status, 1, demanded.stdout);
    assert.match(demanded.stdout, /landlock: off {2}<< required by this configuration/);
  });

  test('a bad value stops the boot', () => {
    for (const env of [{ SKILL_MCP_LANDLOCK: 'maybe' }, { SKILL_MCP_NETWORK: 'no' }]) {
      const r = doctor(env);
      assert.notEqual(r.status, 0);
      assert.match(r.stdout + r.stderr, /cannot start with this configuration: SKILL_MCP_(LANDLOCK|NETWORK)="(maybe|no)" is/);
    }
  });
});
