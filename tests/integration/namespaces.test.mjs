// SKILL_MCP_NAMESPACES=on: each run in its own user and mount namespace, with a private
// /tmp and a filesystem in which the other skills do not exist. Every rule is checked
// against the same script with the option off (the control), and a host that refuses
// user namespaces (unshare denied by seccomp, as a container profile would) makes the
// broker refuse runs and `doctor` fail, never run without the view.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, runForJson, serverEnv } from './lib.mjs';

// Prints what the script can see, and leaves a file in /tmp named by argv[2]. It also
// tries to write and to mkdir in the skills root, and reports the per-mount options
// (/proc/self/mountinfo field 6) of the topmost mount on /tmp and on the skills root
// (null when that path is no mount point).
const VIEW_JS = `'use strict';
const fs = require('node:fs');
const path = require('node:path');
const helper = require('./helper');
const leave = process.argv[2];
const seen = fs.existsSync(leave);
fs.writeFileSync(leave, 'left by a run');
const tryRead = (p) => { try { fs.readFileSync(p); return 'read'; } catch (e) { return e.code; } };
const tryDo = (f) => { try { f(); return 'done'; } catch (e) { return e.code; } };
// The options of the mount that holds \`dir\` (the deepest mount point at or above it; of
// two at one point the last, the one on top): a skills root beneath a hidden place
// (/var/tmp) lies on that place's cover.
const mountOptions = (dir) => {
  const holds = (point) => point === dir || point === '/' || dir.startsWith(point + '/');
  const lines = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n')
    .map((l) => l.split(' ')).filter((f) => f.length > 5 && holds(f[4]));
  let best = null;
  for (const f of lines) if (!best || f[4].length >= best[4].length) best = f;
  return best ? best[5].split(',').sort() : null;
};
const status = fs.readFileSync('/proc/self/status', 'utf8');
const skillsRoot = path.dirname(process.cwd());
const siblings = fs.readdirSync(skillsRoot).sort();
console.log(JSON.stringify({
  helper: helper(),
  cwd: process.cwd(),
  uid: process.getuid(),
  hostFile: fs.existsSync(process.argv[3]),
  leftBefore: seen,
  siblings,
  other: tryRead(path.join(skillsRoot, 'other', 'notes.md')),
  writeRoot: tryDo(() => fs.writeFileSync(path.join(skillsRoot, 'planted'), 'x')),
  mkdirRoot: tryDo(() => fs.mkdirSync(path.join(skillsRoot, 'made'))),
  tmpOptions: mountOptions('/tmp'),
  rootOptions: mountOptions(skillsRoot),
  capBnd: /CapBnd:\\s+(\\S+)/.exec(status)[1],
  uidMap: fs.readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\\s+/),
  setgroups: fs.readFileSync('/proc/self/setgroups', 'utf8').trim(),
}));
`;

// Two skills roots holding the same two skills: `root` under /tmp (so in the view it lies
// beneath the private /tmp), and `coveredRoot` outside /tmp, which the worker covers
// with its own read-only, noexec tmpfs.
let root;
let coveredRoot;
let hostFile;
function plantSkills(dir) {
  const view = join(dir, 'view');
  mkdirSync(join(view, 'scripts'), { recursive: true });
  writeFileSync(join(view, 'SKILL.md'), skillMd(
    'name: view\ndescription: Shows its view.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/view.js\n      interpreter: node\n', '\n# View\n'));
  writeFileSync(join(view, 'scripts', 'view.js'), VIEW_JS);
  writeFileSync(join(view, 'scripts', 'helper.js'), "module.exports = () => 'required';\n");
  const other = join(dir, 'other');
  mkdirSync(other);
  writeFileSync(join(other, 'SKILL.md'), skillMd('name: other\ndescription: Another.', '\n# Other\n'));
  writeFileSync(join(other, 'notes.md'), 'not for the view skill\n');
}
before(() => {
  root = freshDir('skill-mcp-ns-');
  plantSkills(root);
  coveredRoot = realpathSync(mkdtempSync('/var/tmp/skill-mcp-ns-'));
  chmodSync(coveredRoot, 0o755);
  plantSkills(coveredRoot);
  hostFile = join(tmpdir(), `skill-mcp-ns-host-${process.pid}`);
  writeFileSync(hostFile, 'on the host');
});
after(() => {
  removeDir(root);
  if (coveredRoot) removeDir(coveredRoot);
  rmSync(hostFile, { force: true });
});

function runView(env, leave, skillsRoot = root) {
  return runForJson({ env: { SKILLS_DIR: skillsRoot, MCP_CONFIRM_MODE: 'auto', ...env } },
                    { name: 'view', script: 'scripts/view.js', args: [leave, hostFile] });
}

// The doctor line of a host whose kernel or sandbox refuses the run-as user a user
// namespace, or '' when it does not say so. Only that refusal skips the test: any other
// doctor output (a broken view included) lets the test run and fail.
function namespacesRefusedHere() {
  const r = spawnSync(BIN, ['doctor'], { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'on' }),
                                         encoding: 'utf8' });
  const refused = /cannot create a user and mount namespace here \((Operation not permitted|Permission denied|No space left on device)\)/;
  return `${r.stdout}\n${r.stderr}`.split('\n').find((l) => refused.test(l)) ?? '';
}

describe('SKILL_MCP_NAMESPACES=on', () => {
  test('the script sees a private /tmp, only its own skill, and no capability at all', async (t) => {
    const why = namespacesRefusedHere();
    if (why) return t.skip(`this host refuses user namespaces: ${why.trim()}`);
    const leave = join(tmpdir(), `skill-mcp-ns-left-${process.pid}-on`);
    const seen = await runView({ SKILL_MCP_NAMESPACES: 'on' }, leave);
    assert.equal(seen.helper, 'required', 'require() beside the script works in the view');
    assert.equal(seen.cwd, join(root, 'view'), 'cwd is the skill directory at its real path');
    assert.equal(seen.hostFile, false, 'the host /tmp is not visible');
    assert.deepEqual(seen.siblings, ['view'], 'the skills root holds only this skill');
    assert.equal(seen.other, 'ENOENT', 'the other skill does not exist');
    assert.equal(seen.capBnd, '0000000000000000', 'the bounding set is empty');
    const uid = String(seen.uid);
    assert.deepEqual(seen.uidMap, [uid, uid, '1'], 'only the run-as uid is mapped, onto itself');
    assert.equal(seen.setgroups, 'deny', 'setgroups stays refused in the namespace');
    assert.ok(seen.tmpOptions, '/tmp is a mount point in the view');
    assert.ok(seen.tmpOptions.includes('nosuid'), `/tmp is nosuid: ${seen.tmpOptions}`);
    assert.ok(seen.tmpOptions.includes('nodev'), `/tmp is nodev: ${seen.tmpOptions}`);
    assert.equal(existsSync(leave), false, 'what the run left in its /tmp stays there');
    // A second run starts with an empty /tmp again.
    const again = await runView({ SKILL_MCP_NAMESPACES: 'on' }, leave);
    assert.equal(again.leftBefore, false, 'runs do not share /tmp');
    assert.equal(again.uid, seen.uid);
  });

  test('a skills root outside /tmp is covered by a read-only, noexec tmpfs', async (t) => {
    const why = namespacesRefusedHere();
    if (why) return t.skip(`this host refuses user namespaces: ${why.trim()}`);
    const leave = join(tmpdir(), `skill-mcp-ns-left-${process.pid}-covered`);
    const seen = await runView({ SKILL_MCP_NAMESPACES: 'on' }, leave, coveredRoot);
    assert.equal(seen.helper, 'required');
    assert.equal(seen.cwd, join(coveredRoot, 'view'), 'cwd is the skill directory at its real path');
    assert.deepEqual(seen.siblings, ['view'], 'the skills root holds only this skill');
    assert.equal(seen.other, 'ENOENT', 'the other skill does not exist');
    assert.equal(seen.writeRoot, 'EROFS', 'no file can be written in the covered skills root');
    assert.equal(seen.mkdirRoot, 'EROFS', 'no directory can be made in the covered skills root');
    assert.ok(seen.rootOptions, 'the skills root lies on a cover in the view');
    for (const option of ['ro', 'nosuid', 'nodev', 'noexec'])
      assert.ok(seen.rootOptions.includes(option), `the cover is ${option}: ${seen.rootOptions}`);
    assert.ok(seen.tmpOptions?.includes('nosuid') && seen.tmpOptions.includes('nodev'),
              `/tmp is nosuid and nodev: ${seen.tmpOptions}`);
    assert.equal(existsSync(join(coveredRoot, 'planted')), false);
    assert.equal(existsSync(leave), false, 'what the run left in its /tmp stays there');
  });

  test('control: with the option off the same script sees the host', async () => {
    const leave = join(tmpdir(), `skill-mcp-ns-left-${process.pid}-off`);
    try {
      const seen = await runView({ SKILL_MCP_NAMESPACES: 'off' }, leave);
      assert.equal(seen.hostFile, true);
      assert.deepEqual(seen.siblings, ['other', 'view']);
      assert.equal(seen.other, 'read');
      assert.notDeepEqual(seen.uidMap, [String(seen.uid), String(seen.uid), '1'],
                          'the host user namespace maps more than the run-as uid');
      assert.equal(existsSync(leave), true);
      // As the run-as user the host's skills root may refuse a write (EACCES), but it is
      // never a read-only cover, and it is no mount point of its own.
      assert.notEqual(seen.writeRoot, 'EROFS', 'the host skills root is not read-only');
      assert.notEqual(seen.mkdirRoot, 'EROFS', 'the host skills root is not read-only');
      assert.ok(!seen.rootOptions?.includes('noexec') || !seen.rootOptions?.includes('ro'),
                `the host skills root is not covered: ${seen.rootOptions}`);
      const outside = await runView({ SKILL_MCP_NAMESPACES: 'off' }, leave, coveredRoot);
      assert.deepEqual(outside.siblings, ['other', 'view']);
      assert.equal(outside.other, 'read');
      assert.notEqual(outside.writeRoot, 'EROFS', 'the host skills root is not read-only');
      assert.notEqual(outside.mkdirRoot, 'EROFS', 'the host skills root is not read-only');
      assert.ok(!outside.rootOptions?.includes('noexec') || !outside.rootOptions?.includes('ro'),
                `the host skills root is not covered: ${outside.rootOptions}`);
    } finally {
      rmSync(leave, { force: true });
    }
  });

  test('a host that refuses user namespaces: runs are refused and doctor fails', async () => {
    const denied = process.env.SKILL_MCP_TEST_UNSHARE_DENIED;
    assert.ok(denied, 'SKILL_MCP_TEST_UNSHARE_DENIED names the wrapper (meson sets it)');
    const env = serverEnv({ SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'on', MCP_CONFIRM_MODE: 'auto' });
    const doctor = spawnSync(denied, [BIN, 'doctor'], { env, encoding: 'utf8' });
    assert.equal(doctor.status, 1, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, /run-namespaces: off/);
    assert.match(doctor.stdout, /cannot create its user, mount, pid and IPC namespaces here \(.*Operation not permitted\)/);
    // The same broker serving: skill_run refuses with that reason, nothing runs.
    const leave = join(tmpdir(), `skill-mcp-ns-left-${process.pid}-denied`);
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call',
        params: { name: 'skill_run', arguments: { name: 'view', script: 'scripts/view.js', args: [leave, hostFile] } } },
    ].map((m) => JSON.stringify(m)).join('\n') + '\n';
    const served = spawnSync(denied, [BIN], { env, input: lines, encoding: 'utf8' });
    const answer = served.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === 2);
    assert.ok(answer, served.stdout + served.stderr);
    const text = answer.result.content[0].text;
    assert.equal(answer.result.isError, true, text);
    assert.match(text, /SKILL_MCP_NAMESPACES=on/);
    assert.equal(existsSync(leave), false, 'nothing ran');
  });
});
