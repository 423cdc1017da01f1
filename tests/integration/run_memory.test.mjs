// The whole-run memory bound (docs/isolation.md "Whole-run limits"):
// the broker sums the memory of every process of a run and kills the run past
// SKILL_MCP_LIMIT_RUN_MEMORY_MB, with no cgroup. A run forks 6 node children that each
// touch about 100 MiB: with the limit at 256 MiB it is killed and the receipt says why
// (signal SIGKILL, stderr's last line); the control with the limit off runs to its end.
// Every case runs with the broker as root (uid switch) when the test is root, and as an
// unprivileged user (setpriv to 65534 when root, else this user).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, connect, serverEnv } from './lib.mjs';

// Forks 6 children that each fill a 100 MiB Buffer (filled, so every page is touched),
// waits until all say so, holds them 2 s (forty sampling periods), then ends them and
// exits 0 saying how many were ready.
const HOG_JS = `'use strict';
const { spawn } = require('node:child_process');
const CHILD = "const b = Buffer.alloc(100 * 1048576, 1); process.stdout.write('r'); " +
  "setInterval(() => b[0]++, 1000);";
const kids = [];
let ready = 0;
for (let i = 0; i < 6; i++) {
  const k = spawn(process.execPath, ['-e', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
  k.stdout.on('data', (d) => {
    ready += d.length;
    process.stderr.write('child ready\\n');
    if (ready === 6) setTimeout(() => {
      for (const c of kids) c.kill('SIGKILL');
      console.log('ready ' + ready);
      process.exit(0);
    }, 2000);
  });
  kids.push(k);
}
`;

// The same 6 children, forked by a middle process that exits at once: they are orphans
// of the run (re-parented to the pid namespace's init, or without namespaces to the
// broker, its subreaper) and still count. Each prints its pid on the pipe they share.
const ORPHANS_JS = `'use strict';
const { spawn } = require('node:child_process');
const CHILD = "const b = Buffer.alloc(100 * 1048576, 1); process.stdout.write(process.pid + '\\\\n'); " +
  "setInterval(() => b[0]++, 1000);";
const MIDDLE = "const { spawn } = require('node:child_process'); for (let i = 0; i < 6; i++) " +
  "spawn(process.execPath, ['-e', " + JSON.stringify(CHILD) + "], { stdio: ['ignore', 'inherit', 'inherit'] }); " +
  "process.exit(0);";
const middle = spawn(process.execPath, ['-e', MIDDLE], { stdio: ['ignore', 'pipe', 'inherit'] });
let text = '';
middle.stdout.on('data', (d) => {
  text += d;
  const pids = text.split('\\n').filter(Boolean).map(Number);
  if (pids.length === 6) setTimeout(() => {
    for (const p of pids) process.kill(p, 'SIGKILL');
    console.log('ready ' + pids.length);
    process.exit(0);
  }, 2000);
});
`;

let root;
before(() => {
  root = freshDir('skill-mcp-run-memory-');
  const dir = join(root, 'hog');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: hog\ndescription: Forks children that hold memory.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/hog.js\n      interpreter: node\n      timeout: 120\n' +
    '    - script: scripts/orphans.js\n      interpreter: node\n      timeout: 120\n', '\n# Hog\n'));
  writeFileSync(join(dir, 'scripts', 'hog.js'), HOG_JS);
  writeFileSync(join(dir, 'scripts', 'orphans.js'), ORPHANS_JS);
});
after(() => removeDir(root));

const isRoot = process.getuid() === 0;
const SETPRIV = ['--reuid=65534', '--regid=65534', '--clear-groups'];
const MODES = [
  ...(isRoot ? [{ name: 'root (uid switch)', command: BIN, args: [] }] : []),
  { name: 'unprivileged', command: isRoot ? 'setpriv' : BIN, args: isRoot ? [...SETPRIV, BIN] : [] },
];

function doctor(mode, env) {
  const argv = [...mode.args, 'doctor'];
  return spawnSync(mode.command, argv, {
    env: serverEnv({ SKILLS_DIR: root, ...env }), encoding: 'utf8' });
}

// One confirmed run of hog.js on a fresh broker; the receipt.
async function runHog(mode, env, script = 'scripts/hog.js') {
  const s = await connect({ command: mode.command, args: mode.args,
                            env: { SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', ...env } });
  try {
    const a = { name: 'hog', script };
    const first = await callJson(s.client, 'skill_run', a);
    assert.ok(first.json?.confirmToken, first.text);
    const r = await s.client.callTool({ name: 'skill_run', arguments: { ...a, confirmToken: first.json.confirmToken } },
                                      undefined, { timeout: 180000 });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    return JSON.parse(r.content[0].text);
  } finally {
    await s.close();
  }
}

const KILLED = /skill-mcp: the run used more than 256 MiB in all \((\d+) processes, (\d+) MiB when sampled\) and was killed/;

for (const mode of MODES) {
  describe(`whole-run memory, broker ${mode.name}`, () => {
    test('doctor reports the run-memory layer: on with its period and limit, or off and why', () => {
      const on = doctor(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: '256' });
      assert.match(on.stdout, /run-memory: on\n {4}sampled every 50 ms \(or 10 x a sample's cost when longer\), limit 256 MiB per run; a burst faster than the sampling is bounded by nproc x data/, on.stdout);
      const dflt = doctor(mode, { SKILL_MCP_LIMIT_DATA_MB: '300' });
      assert.match(dflt.stdout, /run-memory: on\n {4}sampled every 50 ms \(or 10 x a sample's cost when longer\), limit 600 MiB per run/, dflt.stdout);
      const off = doctor(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: 'off' });
      assert.match(off.stdout, /run-memory: off\n {4}turned off by SKILL_MCP_LIMIT_RUN_MEMORY_MB=off/, off.stdout);
      const bad = doctor(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: '2G' });
      assert.notEqual(bad.status, 0);
      assert.match(bad.stderr + bad.stdout, /SKILL_MCP_LIMIT_RUN_MEMORY_MB="2G" is not a positive whole number/);
    });

    test('a run whose 7 processes pass the limit in all is killed, and the receipt says so', async () => {
      const r = await runHog(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: '256' });
      assert.equal(r.signal, 'SIGKILL', JSON.stringify(r));
      assert.equal(r.exitCode, null);
      assert.equal(r.timedOut, false);
      assert.doesNotMatch(r.stdout, /ready 6/, 'killed before it finished');
      const m = KILLED.exec(r.stderr);
      assert.ok(m, r.stderr);
      assert.ok(Number(m[1]) >= 2, `more than the root process counted: ${m[0]}`);
      assert.ok(Number(m[2]) > 256, m[0]);
      assert.ok(r.stderr.endsWith('SKILL_MCP_LIMIT_RUN_MEMORY_MB sets the limit\n'), r.stderr);
    });

    test('control: with the limit off the same run holds its 6 children and finishes', async () => {
      const r = await runHog(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: 'off' });
      assert.equal(r.exitCode, 0, JSON.stringify(r));
      assert.equal(r.signal, null);
      assert.match(r.stdout, /ready 6/);
      assert.doesNotMatch(r.stderr, /skill-mcp: the run used more/);
    });

    test('under a /proc with hidepid the broker cannot see its runs: off by default, a set limit refuses runs', (t) => {
      if (!isRoot) return t.skip('needs root to mount a /proc with hidepid in a private mount namespace');
      // A private mount namespace whose /proc hides other users' processes (what the unit's
      // ProtectProc=invisible gives), then the broker's doctor, as in mode, inside it.
      const hidden = (env) => spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c',
        'mount -t proc -o hidepid=invisible proc /proc && exec "$@"', 'sh', mode.command, ...mode.args, 'doctor'],
        { env: serverEnv({ SKILLS_DIR: root, ...env }), encoding: 'utf8' });
      const probe = hidden({});
      if (probe.error || !/run-memory:/.test(probe.stdout)) return t.skip(`no private /proc mount here: ${probe.stderr}`);
      assert.match(probe.stdout, /run-memory: off\n {4}\/proc is mounted with hidepid=invisible/, probe.stdout);
      assert.doesNotMatch(probe.stdout, /run-memory: off {2}<< required/);
      const demanded = hidden({ SKILL_MCP_LIMIT_RUN_MEMORY_MB: '256' });
      assert.match(demanded.stdout, /run-memory: off {2}<< required by this configuration/, demanded.stdout);
      assert.match(demanded.stdout, /runs: off\n {4}.*SKILL_MCP_LIMIT_RUN_MEMORY_MB is set, but \/proc is mounted with hidepid/, demanded.stdout);
      assert.equal(demanded.status, 1);
    });

    for (const ns of ['auto', 'off']) {
      test(`orphans of the run count too (SKILL_MCP_NAMESPACES=${ns})`, async () => {
        const r = await runHog(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: '256', SKILL_MCP_NAMESPACES: ns },
                               'scripts/orphans.js');
        assert.equal(r.signal, 'SIGKILL', JSON.stringify(r));
        assert.doesNotMatch(r.stdout, /ready 6/, 'killed before it finished');
        assert.match(r.stderr, KILLED);
        // Control: unbounded, the orphans live until the script ends them.
        const c = await runHog(mode, { SKILL_MCP_LIMIT_RUN_MEMORY_MB: 'off', SKILL_MCP_NAMESPACES: ns },
                               'scripts/orphans.js');
        assert.equal(c.exitCode, 0, JSON.stringify(c));
        assert.match(c.stdout, /ready 6/);
      });
    }
  });
}
