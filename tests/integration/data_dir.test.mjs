// MCP_DATA_DIR and the operator's directories (docs/isolation.md, "The filesystem
// allowlist" and "The operator's configuration"), with the real broker, worker and node,
// Landlock on and the namespaces off (the view would cover the directory anyway):
// - however MCP_DATA_DIR is spelled (a trailing '/', '//', '..', a symlink), its
//   read-write rule never reaches <sysconfdir>/skill-mcp: a world-readable file planted
//   there stays unread, and the script still sees MCP_DATA_DIR exactly as it was set;
// - MCP_DATA_DIR naming an operator's directory itself (or one in it) refuses the run at
//   its Landlock step (RUN_SETUP_FAILED);
// - a data directory spelled with a trailing '/' or through a symlink is still writable.
// Each case runs with the broker as root and as uid 65534 (setpriv); planting needs root.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, rmdirSync,
         symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';

import { skillMd } from './fixtures.mjs';
import { confirmedRun, connect, launcher, serverEnv } from './lib.mjs';

const PROBE_JS = `'use strict';
const fs = require('node:fs');
const [planted, write] = process.argv.slice(2);
const out = { dataDir: process.env.MCP_DATA_DIR };
try { fs.readFileSync(planted); out.planted = 'read'; } catch (e) { out.planted = e.code; }
if (write) {
  try { fs.writeFileSync(write, 'by a run'); out.write = 'written'; } catch (e) { out.write = e.code; }
}
console.log(JSON.stringify(out));
`;

const IS_ROOT = process.getuid() === 0;
const SYSCONFDIR = process.env.SKILL_MCP_TEST_SYSCONFDIR;
const GRANT = JSON.stringify([{ skill: 'probe', script: 'scripts/probe.js' }]);

let base, root, data;
before(() => {
  base = realpathSync(mkdtempSync('/var/tmp/skill-mcp-datadir-'));
  root = join(base, 'skills');
  const dir = join(root, 'probe');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: probe\ndescription: Tries MCP_DATA_DIR.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/probe.js\n      interpreter: node\n', '\n# P\n'));
  writeFileSync(join(dir, 'scripts', 'probe.js'), PROBE_JS);
  data = join(base, 'data');
  mkdirSync(data);
  spawnSync('chmod', ['-R', 'a+rX', base]);
  chmodSync(data, 0o777);  // any run uid may write it: only Landlock decides
  symlinkSync(data, join(base, 'data-link'));
  if (SYSCONFDIR) symlinkSync(SYSCONFDIR, join(base, 'sysconf-link'));
});
after(() => { if (base) rmSync(base, { recursive: true, force: true }); });

// The run's outcome: the probe's JSON, or { refused: text } when the run did not start.
async function run(env, args, asUser) {
  const conn = await connect({ env: { SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', MCP_SKILL_RUN: GRANT,
                                      SKILL_MCP_NAMESPACES: 'off', ...env }, ...launcher(asUser) });
  try {
    const call = { name: 'probe', script: 'scripts/probe.js', args };
    const done = await confirmedRun(conn.client, call);
    if (done.isError) return { refused: done.text };
    assert.equal(done.json.exitCode, 0, done.text);
    return JSON.parse(done.json.stdout);
  } finally {
    await conn.close();
  }
}

function landlockAbi(asUser) {
  const { command, args } = launcher(asUser);
  const out = spawnSync(command, [...args, 'doctor'], {
    env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_LANDLOCK: 'auto' }), encoding: 'utf8' }).stdout;
  return Number(/landlock: on\n\s+Landlock ABI (\d+)/.exec(out)?.[1] ?? 0);
}

// What is missing of `dir`, made (0755); returns the list to remove, deepest last.
function makePath(dir) {
  const made = [];
  const parts = dir.split('/').slice(1);
  for (let i = 1; i <= parts.length; i++) {
    const p = '/' + parts.slice(0, i).join('/');
    if (!existsSync(p)) { mkdirSync(p, { mode: 0o755 }); made.push(p); }
  }
  return made;
}

const modes = [['as root', false], ['as an ordinary user (setpriv 65534)', true]];

for (const [label, asUser] of modes) {
  describe(`MCP_DATA_DIR and <sysconfdir>/skill-mcp, ${label}`, () => {
    test('no spelling of MCP_DATA_DIR reaches a file planted there', async (t) => {
      if (!IS_ROOT) return t.skip('planting a file in <sysconfdir>/skill-mcp needs root');
      if (!SYSCONFDIR) return t.skip('SKILL_MCP_TEST_SYSCONFDIR is not set (run through meson)');
      if (!landlockAbi(asUser)) return t.skip('no Landlock here (doctor says why)');
      const opDir = join(SYSCONFDIR, 'skill-mcp');
      const made = makePath(opDir);
      const planted = join(opDir, `datadir-test.${process.pid}`);
      writeFileSync(planted, 'SKILL_MCP_SECRET=planted\n');
      chmodSync(planted, 0o644);  // readable by anyone: only the cell keeps the run out
      try {
        // The directory holding <sysconfdir>/skill-mcp, spelled every way that is not its
        // real path, and /usr//local-style doubled slashes on the way.
        const spellings = [SYSCONFDIR + '/', SYSCONFDIR.replace('/', '//'), SYSCONFDIR + '/.',
                           opDir + '/..', join(base, 'sysconf-link'),
                           dirname(SYSCONFDIR) + '/'];
        for (const spelled of spellings) {
          const seen = await run({ SKILL_MCP_LANDLOCK: 'auto', MCP_DATA_DIR: spelled }, [planted], asUser);
          assert.equal(seen.refused, undefined, `${spelled}: ${seen.refused}`);
          assert.notEqual(seen.planted, 'read', `MCP_DATA_DIR=${spelled}: ${JSON.stringify(seen)}`);
          assert.equal(seen.dataDir, spelled, 'the script sees MCP_DATA_DIR as it was set');
        }
        // MCP_DATA_DIR that is the operator's directory itself, or beneath it: refused.
        for (const spelled of [opDir, opDir + '/']) {
          const seen = await run({ SKILL_MCP_LANDLOCK: 'auto', MCP_DATA_DIR: spelled }, [planted], asUser);
          assert.notEqual(seen.planted, 'read', `MCP_DATA_DIR=${spelled}: ${JSON.stringify(seen)}`);
          assert.match(seen.refused ?? '', /RUN_SETUP_FAILED.*Landlock/, `MCP_DATA_DIR=${spelled}: ${JSON.stringify(seen)}`);
        }
        // Control: with Landlock off the same file is read.
        const control = await run({ SKILL_MCP_LANDLOCK: 'off', MCP_DATA_DIR: SYSCONFDIR + '/' }, [planted], asUser);
        assert.equal(control.planted, 'read', `control: ${JSON.stringify(control)}`);
      } finally {
        rmSync(planted, { force: true });
        for (const dir of made.reverse()) rmdirSync(dir);
      }
    });
  });

  describe(`MCP_DATA_DIR spelled otherwise is still writable, ${label}`, () => {
    for (const [what, spelled] of [['a trailing slash', () => data + '/'],
                                   ['a doubled slash', () => data.replace('/', '//')],
                                   ['a symlink to it', () => join(base, 'data-link')]]) {
      test(what, async (t) => {
        if (!landlockAbi(asUser)) return t.skip('no Landlock here (doctor says why)');
        const file = join(data, `w-${process.pid}-${asUser ? 'u' : 'r'}-${what.length}`);
        const seen = await run({ SKILL_MCP_LANDLOCK: 'auto', MCP_DATA_DIR: spelled() },
                               ['/nonexistent', join(spelled(), file.slice(data.length + 1))], asUser);
        assert.equal(seen.write, 'written', JSON.stringify(seen));
        assert.equal(seen.dataDir, spelled());
      });
    }
  });
}
