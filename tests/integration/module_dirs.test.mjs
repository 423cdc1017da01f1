// Which node_modules a run may read (docs/isolation.md, "The node_modules directories"),
// end to end: a real broker as root, the real worker and node under Landlock. A run
// gets only its own skills root's module directories; never one that is a symlink, one
// another user owns, or one inside another skill. Each refusal has a control in the
// same run or the next one, so every assertion can fail. Without root (chown) or
// Landlock the cases skip with the reason.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, runForJson, serverEnv } from './lib.mjs';

const PROBE_JS = `'use strict';
const fs = require('node:fs');
const p = JSON.parse(process.argv[2]);
const tryRead = (f) => { try { fs.readFileSync(f); return 'read'; } catch (e) { return e.code; } };
const tryRequire = (m) => { try { return require(m)(); } catch (e) { return e.code; } };
console.log(JSON.stringify({
  beside: tryRequire('beside'),
  otherRoot: tryRead(p.otherRoot),
  ownRootSkill: tryRead(p.ownRootSkill),
  linked: tryRead(p.linked),
}));
`;

const IS_ROOT = process.getuid() === 0;
const OTHER_UID = 4243;
// What require() says when Landlock refuses the directory it climbs into.
const NOT_LOADED = ['EACCES', 'MODULE_NOT_FOUND'];
let base, root, paths;

function writeModule(dir, name) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.js'), `module.exports = () => '${name}';\n`);
}

function plant() {
  base = freshDir('skill-mcp-module-dirs-');
  // Root one: <base>/a/skills, the probe skill; beside it <base>/a/node_modules/beside.
  root = join(base, 'a', 'skills');
  const probe = join(root, 'probe');
  mkdirSync(join(probe, 'scripts'), { recursive: true });
  writeFileSync(join(probe, 'SKILL.md'), skillMd(
    'name: probe\ndescription: Reads module directories.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/probe.js\n      interpreter: node\n', '\n# Probe\n'));
  writeFileSync(join(probe, 'scripts', 'probe.js'), PROBE_JS);
  writeModule(join(base, 'a', 'node_modules', 'beside'), 'beside');
  // Its own node_modules is a symlink to a directory holding a marker.
  writeModule(join(base, 'elsewhere'), 'elsewhere');
  symlinkSync(join(base, 'elsewhere'), join(root, 'node_modules'));
  // Root two: <base>/b/skills with a node_modules of its own (another root's).
  const two = join(base, 'b', 'skills');
  mkdirSync(join(two, 'x'), { recursive: true });
  writeFileSync(join(two, 'x', 'SKILL.md'), skillMd('name: x\ndescription: X.', '\n# X\n'));
  writeModule(join(two, 'node_modules', 'two'), 'two');
  // Root three: <base>/c/own is itself a skill (<root>/SKILL.md) shipping node_modules.
  const own = join(base, 'c', 'own');
  mkdirSync(own, { recursive: true });
  writeFileSync(join(own, 'SKILL.md'), skillMd('name: own\ndescription: Own.', '\n# Own\n'));
  writeModule(join(own, 'node_modules', 'bundled'), 'bundled');
  spawnSync('chmod', ['-R', 'go+rX,go-w', base]);
  paths = {
    otherRoot: join(two, 'node_modules', 'two', 'index.js'),
    ownRootSkill: join(own, 'node_modules', 'bundled', 'index.js'),
    linked: join(root, 'node_modules', 'index.js'),
    roots: [root, two, own].join(':'),
    besideDir: join(base, 'a', 'node_modules'),
  };
}

before(() => { if (IS_ROOT) plant(); });
after(() => { if (base) removeDir(base); });

function run(env = {}) {
  return runForJson({
    env: { SKILLS_DIR: paths.roots, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_LANDLOCK: 'auto',
           SKILL_MCP_NAMESPACES: 'off', ...env },
  }, { name: 'probe', script: 'scripts/probe.js', args: [JSON.stringify(paths)] });
}

function landlockAbi() {
  const out = spawnSync(BIN, ['doctor'], {
    env: serverEnv({ SKILLS_DIR: paths.roots, SKILL_MCP_LANDLOCK: 'auto' }), encoding: 'utf8' }).stdout;
  return Number(/landlock: on\n\s+Landlock ABI (\d+)/.exec(out)?.[1] ?? 0);
}

describe('node_modules a run may read (Landlock)', () => {
  test('only its own root, no symlink, none inside another skill', async (t) => {
    if (!IS_ROOT) return t.skip('the fixtures need root (chown)');
    if (!landlockAbi()) return t.skip('no Landlock here (doctor says why)');
    const seen = await run();
    assert.equal(seen.beside, 'beside', 'its own root\'s node_modules loads (control)');
    assert.equal(seen.otherRoot, 'EACCES', "another root's node_modules");
    assert.equal(seen.ownRootSkill, 'EACCES', "a skill's own bundled node_modules");
    assert.equal(seen.linked, 'EACCES', 'a node_modules that is a symlink is not followed');
    const off = await run({ SKILL_MCP_LANDLOCK: 'off' });  // control: only the allowlist refuses
    assert.deepEqual([off.otherRoot, off.ownRootSkill, off.linked], ['read', 'read', 'read']);
  });

  test("another user's node_modules beside the root is never loaded", async (t) => {
    if (!IS_ROOT) return t.skip('the fixtures need root (chown)');
    if (!landlockAbi()) return t.skip('no Landlock here (doctor says why)');
    chownSync(paths.besideDir, OTHER_UID, OTHER_UID);
    try {
      assert.ok(NOT_LOADED.includes((await run()).beside), `owned by uid ${OTHER_UID}`);
    } finally {
      chownSync(paths.besideDir, 0, 0);
    }
    chmodSync(paths.besideDir, 0o757);
    try {
      assert.ok(NOT_LOADED.includes((await run()).beside), 'writable by others');
    } finally {
      chmodSync(paths.besideDir, 0o755);
    }
    assert.equal((await run()).beside, 'beside', "owned by the root's owner (control)");
  });
});
