// A running script and the broker's life: the broker keeps answering while a script
// runs, refuses a second run, and notifications/cancelled, a client that goes away and
// SIGTERM to the broker each kill the script's whole process group.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { sleep, spawnRaw } from './lib.mjs';

// Records its own pid and a child's, then waits forever. The child is spawned detached:
// under seccomp it stays in the run's group all the same; with seccomp off it leads a
// group of its own, and only the broker's subreaper sweep can end it.
const SLOW_JS = `'use strict';
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'],
                    { stdio: 'ignore', detached: true });
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
  const mark = join(root, 'mark');
  mkdirSync(join(mark, 'scripts'), { recursive: true });
  writeFileSync(join(mark, 'SKILL.md'), skillMd(
    'name: mark\ndescription: Marks.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/mark.js\n      interpreter: node\n', '\n# Mark\n'));
  writeFileSync(join(mark, 'scripts', 'mark.js'),
    "require('node:fs').appendFileSync(process.argv[2], 'ran\\n');\n");
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
  assert.fail(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
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

// The script reports host pids into a directory the run's own view would hide: these
// cases are about the process group without namespaces (cell.test.mjs has the cell).
const env = () => ({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_NAMESPACES: 'off' });

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
      assert.ok(JSON.parse(list.result.content[0].text).skills.some((s) => s.name === 'slow'));
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

      // The busy refusal spent nothing: the same token now runs the script. The cancelled
      // run still settles (its drain) after its group died, and a cancelled call gets no
      // answer to tell the client when: a client retries while it hears RUN_IN_PROGRESS.
      const marker = join(markers, 'cancel');
      let runId = 'run-3';
      for (let attempt = 0; ; ++attempt) {
        runId = `run-3-${attempt}`;
        raw.send({ jsonrpc: '2.0', id: runId, method: 'tools/call',
                   params: { name: 'skill_run', arguments: { ...args, confirmToken: token } } });
        await sleep(100);
        const answer = raw.lines.map((l) => JSON.parse(l)).find((m) => m.id === runId);
        if (!answer || !/RUN_IN_PROGRESS/.test(answer.result?.content?.[0]?.text ?? '')) break;
        assert.ok(attempt < 50, 'the cancelled run never settled');
      }
      await waitFor(() => {
        const text = readFileSync(marker, 'utf8');
        return text.endsWith('\n') && text.split(' ')[0] !== String(pids[0]);
      }, 15000, () => 'the script to start again with the token the busy refusal left unspent; ' +
         `${runId} answered: ${raw.lines.find((l) => JSON.parse(l).id === runId) ?? 'nothing yet'}`);
      const again = readFileSync(marker, 'utf8').trim().split(' ').map(Number);
      raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: runId } });
      await waitFor(() => again.every((p) => !alive(p)), 5000, 'the second script group to die');
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

  test('a client that goes away takes even a process that left the group with it', async () => {
    // The host's network: without the filter, the declared mode's fallback could not hold.
    const raw = spawnRaw({ ...env(), SKILL_MCP_SECCOMP: 'off', SKILL_MCP_NETWORK: 'on' });
    await raw.initialize();
    const { pids } = await startRun(raw, 'run-1', join(markers, 'escaped'));
    const pgrp = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[2];
    assert.equal(pgrp(pids[1]), String(pids[1]), 'without seccomp the child leads its own group');
    const { code } = await raw.end(10000);
    assert.equal(code, 0);
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

  test('two calls carrying one token, pipelined back to back: at most one runs', async () => {
    const raw = spawnRaw(env());
    try {
      await raw.initialize();
      const marker = join(markers, 'pipelined');
      const args = { name: 'mark', script: 'scripts/mark.js', args: [marker] };
      const preview = await raw.request({ jsonrpc: '2.0', id: 'p', method: 'tools/call',
                                          params: { name: 'skill_run', arguments: args } });
      const token = JSON.parse(preview.result.content[0].text).confirmToken;
      const call = (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
        params: { name: 'skill_run', arguments: { ...args, confirmToken: token } } });
      raw.child.stdin.write(call('a') + '\n' + call('b') + '\n'); // one write: both queued
      const answers = [await raw.next(15000), await raw.next(15000)];
      const ran = answers.filter((a) => !a.result.isError);
      assert.equal(ran.length, 1, JSON.stringify(answers));
      assert.equal(JSON.parse(ran[0].result.content[0].text).exitCode, 0);
      assert.equal(readFileSync(marker, 'utf8'), 'ran\n', 'the script ran exactly once');
      const again = await raw.request({ jsonrpc: '2.0', id: 'c', method: 'tools/call',
        params: { name: 'skill_run', arguments: { ...args, confirmToken: token } } });
      assert.equal(again.result.isError, true);
      assert.match(again.result.content[0].text, /TOKEN_REUSED/);
      assert.equal(readFileSync(marker, 'utf8'), 'ran\n');
    } finally {
      raw.kill();
    }
  });

  test('a pending prompt: the broker keeps answering; a stale answer approves nothing', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize('2025-06-18', { elicitation: {} });
      const marker = join(markers, 'prompt');
      raw.send({ jsonrpc: '2.0', id: 'run', method: 'tools/call',
                 params: { name: 'skill_run', arguments: { name: 'mark', script: 'scripts/mark.js',
                                                           args: [marker] } } });
      const ask = await raw.next();
      assert.equal(ask.method, 'elicitation/create');
      const pong = await raw.request({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
      assert.deepEqual(pong, { jsonrpc: '2.0', id: 'ping', result: {} });
      // An approval under an id the server never used is ignored.
      raw.send({ jsonrpc: '2.0', id: 'not-' + ask.id,
                 result: { action: 'accept', content: { approve: true } } });
      const pong2 = await raw.request({ jsonrpc: '2.0', id: 'ping2', method: 'ping' });
      assert.equal(pong2.id, 'ping2');
      assert.ok(!existsSync(marker), 'nothing ran on a stale approval');
      raw.send({ jsonrpc: '2.0', id: ask.id, result: { action: 'decline' } });
      const answer = await raw.next();
      assert.equal(answer.id, 'run');
      assert.equal(JSON.parse(answer.result.content[0].text).cancelled, true);
      assert.ok(!existsSync(marker), 'nothing ran after a decline');
    } finally {
      raw.kill();
    }
  });
});
