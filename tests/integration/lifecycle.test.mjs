// A running script and the broker's life: the broker keeps answering while a script
// runs, refuses a second run, and notifications/cancelled, a client that goes away and
// SIGTERM to the broker each kill the script's whole process group.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { sleep, spawnRaw } from './lib.mjs';

// Records its own pid and a child's (same process group), then waits forever.
const SLOW_JS = `'use strict';
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
fs.writeFileSync(process.argv[2], process.pid + ' ' + child.pid + '\\n');
setInterval(() => {}, 1000);
`;

let root;
let markers;
before(() => {
  root = freshDir();
  const dir = join(root, 'slow');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: slow\ndescription: Sleeps.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/slow.js\n      interpreter: node\n      timeout: 60\n', '\n# Slow\n'));
  writeFileSync(join(dir, 'scripts', 'slow.js'), SLOW_JS);
  markers = join(root, 'markers');
  mkdirSync(markers);
  chmodSync(markers, 0o777); // the script may run as another uid
});
after(() => removeDir(root));

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat); // a zombie is dead, only not yet reaped
  } catch {
    return false;
  }
}

async function waitFor(pred, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

// Starts a confirmed run (two steps, mode auto) without waiting for its answer and
// returns the pids the script recorded.
async function startRun(raw, id, marker) {
  const args = { name: 'slow', script: 'scripts/slow.js', args: [marker] };
  const preview = await raw.request({ jsonrpc: '2.0', id: `${id}-preview`, method: 'tools/call',
                                      params: { name: 'skill_run', arguments: args } });
  const token = JSON.parse(preview.result.content[0].text).confirmToken;
  assert.ok(token, 'a token was issued');
  raw.send({ jsonrpc: '2.0', id, method: 'tools/call',
             params: { name: 'skill_run', arguments: { ...args, confirmToken: token } } });
  await waitFor(() => existsSync(marker) && readFileSync(marker, 'utf8').includes('\n'), 15000,
                'the script to start');
  const pids = readFileSync(marker, 'utf8').trim().split(' ').map(Number);
  assert.equal(pids.length, 2);
  for (const pid of pids) assert.ok(alive(pid), `pid ${pid} runs`);
  return { args, pids };
}

const env = () => ({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto' });

describe('a running script and the broker', () => {
  test('keeps answering while a script runs; a second run is refused; cancel kills the group', async () => {
    const raw = spawnRaw(env());
    try {
      await raw.initialize();
      const { args, pids } = await startRun(raw, 'run-1', join(markers, 'cancel'));
      const pong = await raw.request({ jsonrpc: '2.0', id: 'ping-1', method: 'ping' });
      assert.deepEqual(pong.result, {});
      const list = await raw.request({ jsonrpc: '2.0', id: 'list-1', method: 'tools/call',
                                       params: { name: 'skill_list', arguments: {} } });
      assert.equal(JSON.parse(list.result.content[0].text).skills[0].name, 'slow');
      const preview = await raw.request({ jsonrpc: '2.0', id: 'p2', method: 'tools/call',
                                          params: { name: 'skill_run', arguments: args } });
      const token = JSON.parse(preview.result.content[0].text).confirmToken;
      const second = await raw.request({ jsonrpc: '2.0', id: 'run-2', method: 'tools/call',
        params: { name: 'skill_run', arguments: { ...args, confirmToken: token } } });
      assert.equal(second.result.isError, true);
      assert.match(second.result.content[0].text, /RUN_IN_PROGRESS/);

      raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled',
                 params: { requestId: 'run-1', reason: 'test' } });
      await waitFor(() => pids.every((p) => !alive(p)), 5000, 'the script group to die');
      // The cancelled request gets no answer; the next request is answered.
      const after = await raw.request({ jsonrpc: '2.0', id: 'ping-2', method: 'ping' });
      assert.equal(after.id, 'ping-2');
      assert.ok(!raw.lines.some((l) => JSON.parse(l).id === 'run-1'), 'no answer to a cancelled call');
    } finally {
      raw.kill();
    }
  });

  test('a client that goes away takes its script with it', async () => {
    const raw = spawnRaw(env());
    const { pids } = await (async () => {
      await raw.initialize();
      return startRun(raw, 'run-1', join(markers, 'eof'));
    })();
    const t0 = Date.now();
    const { code } = await raw.end(10000);
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 < 5000, 'the broker exits promptly');
    for (const pid of pids) assert.ok(!alive(pid), `pid ${pid} is gone once the broker has exited`);
  });

  test('SIGTERM to the broker kills the script group before it exits', async () => {
    const raw = spawnRaw(env());
    await raw.initialize();
    const { pids } = await startRun(raw, 'run-1', join(markers, 'term'));
    raw.child.kill('SIGTERM');
    const { code } = await raw.exited;
    assert.equal(code, 0);
    for (const pid of pids) assert.ok(!alive(pid), `pid ${pid} is gone once the broker has exited`);
  });
});
