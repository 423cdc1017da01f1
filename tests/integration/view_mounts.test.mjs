// The namespaced view's read-only binds of a skill and its node_modules that live on a
// mount with its own options (worker/bind_readonly.cc, KeptMountFlags): a user namespace may
// not clear a locked atime setting of a mount it received, so a remount that dropped or
// changed it fails the run (EPERM), and one that omitted nosymfollow would quietly let the
// run follow symlinks there. Each case mounts a tmpfs with the options in a private mount
// namespace, copies a skills tree onto it, and starts the broker there (as root, and as
// uid 65534 via setpriv): the run must start, load both node_modules, and see its skill
// and those directories read-only with the source's options kept. The control with the
// view off shows the same mounts writable and without `ro`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { AS_NOBODY, BIN, runForJson, serverEnv } from './lib.mjs';

// Prints what the run sees: its modules, the options of the mounts at its skill directory
// and at the two node_modules, and whether it could write in them.
const PROBE_JS = `'use strict';
const fs = require('node:fs');
const path = require('node:path');
const skill = path.dirname(__dirname);
const root = path.dirname(skill);
const base = path.dirname(root);
const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\\n').map((l) => l.split(' '));
// The last entry for a mount point is the one on top.
const opts = (dir) => mounts.filter((f) => f[4] === dir).map((f) => f[5]).pop() ?? 'none';
const tryWrite = (f) => { try { fs.writeFileSync(f, 'x'); return 'written'; } catch (e) { return e.code; } };
const tryRequire = (m) => { try { return require(m)(); } catch (e) { return e.code; } };
console.log(JSON.stringify({
  beside: tryRequire('beside'), inroot: tryRequire('inroot'),
  skill: opts(skill), inRootModules: opts(path.join(root, 'node_modules')),
  besideModules: opts(path.join(base, 'node_modules')),
  writeSkill: tryWrite(path.join(skill, 'left-by-a-run')),
  writeModules: tryWrite(path.join(root, 'node_modules', 'left-by-a-run')),
  writeInner: fs.existsSync(path.join(skill, 'inner')) ? tryWrite(path.join(skill, 'inner', 'left-by-a-run')) : 'none',
}));
`;

const IS_ROOT = process.getuid() === 0;
const OPTION_SETS = ['strictatime', 'strictatime,nodiratime', 'nosymfollow', 'noatime',
                     'relatime,nodiratime', 'noexec'];

// <stage>/skills/probe, <stage>/node_modules/beside, <stage>/skills/node_modules/inroot.
function stageTree(stage) {
  const skill = join(stage, 'skills', 'probe');
  mkdirSync(join(skill, 'scripts'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), skillMd(
    'name: probe\ndescription: Tries its view.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/probe.js\n      interpreter: node\n      timeout: 60\n', '\n# P\n'));
  writeFileSync(join(skill, 'scripts', 'probe.js'), PROBE_JS);
  for (const [dir, name] of [[join(stage, 'node_modules', 'beside'), 'beside'],
                             [join(stage, 'skills', 'node_modules', 'inroot'), 'inroot']]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.js'), `module.exports = () => '${name}';\n`);
  }
}

// The broker in its own private mount namespace, on a tmpfs mounted with `options` at
// `mnt` holding a copy of `stage`; owned by uid 65534 when the broker runs as that user,
// so only the view's read-only binds can refuse its writes.
// With `inner`, a writable tmpfs is mounted inside the skill directory as well (at inner/).
function launcher(options, mnt, stage, asUser, inner = false) {
  const script = 'mount -t tmpfs -o "$1,mode=0755" tmpfs "$2" && cp -R "$3"/. "$2"/ && ' +
    'chmod -R a+rX "$2" && { [ "$4" = root ] || chown -R 65534:65534 "$2"; } && ' +
    '{ [ "$5" = no ] || { mkdir "$2/skills/probe/inner" && ' +
    'mount -t tmpfs -o mode=0777 tmpfs "$2/skills/probe/inner"; }; } && shift 5 && exec "$@"';
  const broker = asUser ? [...AS_NOBODY, BIN] : [BIN];
  return { command: 'unshare',
           args: ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'sh',
                  options, mnt, stage, asUser ? 'user' : 'root', inner ? 'yes' : 'no', ...broker] };
}

async function runProbe(options, mnt, stage, asUser, env, inner = false) {
  return runForJson({
    env: { SKILLS_DIR: join(mnt, 'skills'), MCP_CONFIRM_MODE: 'auto', ...env },
    ...launcher(options, mnt, stage, asUser, inner) }, { name: 'probe', script: 'scripts/probe.js' }, options);
}

// Whether this host lets root mount a tmpfs with `options` in a private mount namespace
// (a container without CAP_SYS_ADMIN refuses; nosymfollow needs Linux 5.10).
function privateMountHere(options, mnt) {
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c',
                                  'mount -t tmpfs -o "$1" tmpfs "$2"', 'sh', options, mnt],
                      { encoding: 'utf8' });
  return r.status === 0 ? null : (r.stderr || r.error?.message || `exit ${r.status}`).trim();
}

function namespacesHere(asUser) {
  const args = asUser ? ['--reuid=65534', '--regid=65534', '--clear-groups', BIN, 'doctor'] : ['doctor'];
  const out = spawnSync(asUser ? 'setpriv' : BIN, args,
                        { env: serverEnv({ SKILL_MCP_NAMESPACES: 'auto' }), encoding: 'utf8' }).stdout;
  return /run-namespaces: on/.test(out);
}

let stage, mnt;
before(() => {
  stage = freshDir('skill-mcp-mounts-stage-');
  stageTree(stage);
  mnt = freshDir('skill-mcp-mounts-');
});
after(() => {
  if (stage) removeDir(stage);
  if (mnt) removeDir(mnt);
});

const modes = [['as root', false], ['as an ordinary user (setpriv 65534)', true]];

for (const [label, asUser] of modes) {
  describe(`a skill on a mount with its own options, ${label}`, () => {
    for (const options of OPTION_SETS) {
      test(`${options}: the run starts and its view is read-only with the options kept`, async (t) => {
        if (!IS_ROOT) return t.skip('mounting the tmpfs in a private mount namespace needs root');
        const refused = privateMountHere(options, mnt);
        if (refused) return t.skip(`a tmpfs with ${options} in a private mount namespace is refused here: ${refused}`);
        if (!namespacesHere(asUser)) return t.skip('this host refuses the run namespaces (doctor says why)');
        const seen = await runProbe(options, mnt, stage, asUser,
                                    { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: 'off' });
        const what = `${options}: ${JSON.stringify(seen)}`;
        assert.deepEqual([seen.beside, seen.inroot], ['beside', 'inroot'], what);
        for (const key of ['skill', 'inRootModules', 'besideModules']) {
          const flags = seen[key].split(',');
          assert.ok(flags.includes('ro'), `${key} is read-only: ${what}`);
          assert.equal(flags.includes('nosymfollow'), options.includes('nosymfollow'), `${key}: ${what}`);
          assert.equal(flags.includes('nodiratime'), options.includes('nodiratime'), `${key}: ${what}`);
          assert.equal(flags.includes('noexec'), options.includes('noexec'), `${key}: ${what}`);
          if (options.includes('noatime')) assert.ok(flags.includes('noatime'), `${key} keeps noatime: ${what}`);
          if (options.includes('relatime')) assert.ok(flags.includes('relatime'), `${key} keeps relatime: ${what}`);
          if (options.includes('strictatime')) {
            assert.ok(!flags.includes('relatime') && !flags.includes('noatime'), `${key} keeps strictatime: ${what}`);
          }
        }
        // A read-only mount refuses a write before any permission check (EROFS); as an
        // ordinary user the broker's user owns the tree, so nothing else would refuse it.
        assert.deepEqual([seen.writeSkill, seen.writeModules], ['EROFS', 'EROFS'], what);
        // Control: without the view the same directories are the tmpfs itself, writable.
        const open = await runProbe(options, mnt, stage, asUser,
                                    { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_LANDLOCK: 'off' });
        assert.equal(open.skill, 'none', `control: no bind at the skill: ${JSON.stringify(open)}`);
        assert.deepEqual([open.writeSkill, open.writeModules], asUser ? ['written', 'written'] : ['EACCES', 'EACCES'],
                         `control: ${JSON.stringify(open)}`);
      });
    }
  });

  describe(`a mount inside the skill directory, ${label}`, () => {
    // The skill's bind is recursive, so a mount inside it comes along: read-only as well.
    test('is read-only in the view', async (t) => {
      if (!IS_ROOT) return t.skip('mounting the tmpfs in a private mount namespace needs root');
      const refused = privateMountHere('strictatime', mnt);
      if (refused) return t.skip(`a tmpfs in a private mount namespace is refused here: ${refused}`);
      if (!namespacesHere(asUser)) return t.skip('this host refuses the run namespaces (doctor says why)');
      const seen = await runProbe('strictatime', mnt, stage, asUser,
                                  { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_LANDLOCK: 'off' }, true);
      assert.equal(seen.writeInner, 'EROFS', JSON.stringify(seen));
      assert.equal(seen.writeSkill, 'EROFS', JSON.stringify(seen));
      // Control: without the view the inner mount is writable by anyone (mode 0777).
      const open = await runProbe('strictatime', mnt, stage, asUser,
                                  { SKILL_MCP_NAMESPACES: 'off', SKILL_MCP_LANDLOCK: 'off' }, true);
      assert.equal(open.writeInner, 'written', `control: ${JSON.stringify(open)}`);
    });
  });
}
