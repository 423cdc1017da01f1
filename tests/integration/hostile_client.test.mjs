// A client that misbehaves at the transport level, over raw stdio: it stops reading
// stdout, never reads again, reuses a live request id, sends malformed lines under each
// protocol revision, or gives the broker stdin it cannot poll. The broker keeps enforcing
// run timeouts and signals, holds bounded memory, and answers each id once.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, serverEnv, sleep, spawnRaw } from './lib.mjs';

let base;
let root;
let markers;
before(() => {
  base = freshDir('skill-mcp-hostile-');
  root = join(base, 'skills');
  markers = join(base, 'markers');
  mkdirSync(markers);
  chmodSync(markers, 0o1777); // the script may run as another uid (mkdir's mode meets the umask)
  const dir = join(root, 'sleepy');
  mkdirSync(join(dir, 'scripts'), { recursive: true, mode: 0o755 });
  writeFileSync(
    join(dir, 'SKILL.md'),
    skillMd(
      [
        'name: sleepy',
        'description: Writes its pid, then sleeps past its time limit.',
        'mcp-host:',
        '  version: 1',
        '  run:',
        '    - script: scripts/sleepy.js',
        '      interpreter: node',
        '      timeout: 2',
        '    - script: scripts/pause.js',
        '      interpreter: node',
        '      timeout: 10',
      ].join('\n'),
      '\nRun scripts/sleepy.js.\n',
    ),
  );
  writeFileSync(
    join(dir, 'scripts', 'sleepy.js'),
    "require('node:fs').writeFileSync(process.argv[2], String(process.pid)); setTimeout(() => {}, 60000);\n",
  );
  writeFileSync(join(dir, 'scripts', 'pause.js'), "setTimeout(() => process.stdout.write('done'), 300);\n");
  // The script may run as another, unprivileged uid: everything readable.
  execFileSync('chmod', ['-R', 'a+rX', base]);
});
after(() => removeDir(base));

let seq = 0;
function marker() {
  seq += 1;
  return join(markers, `pid${seq}`);
}

function call(id, args) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'skill_run', arguments: args } };
}

/** A confirmation token for `args` (the preview-and-token flow: no elicitation). */
async function tokenFor(raw, args) {
  const answer = await raw.request(call(`preview-${++seq}`, args));
  const body = JSON.parse(answer.result.content[0].text);
  assert.equal(body.status, 'confirmation-required', answer.result.content[0].text);
  return body.confirmToken;
}

async function waitFor(what, predicate, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (predicate()) return;
    await sleep(50);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms`);
}

function alive(pid) {
  return existsSync(`/proc/${pid}`);
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

/** Sends `n` pings with long ids, so each answer is about 330 bytes. */
function flood(raw, n) {
  const pad = 'p'.repeat(300);
  const batch = [];
  for (let i = 0; i < n; i++) {
    batch.push(JSON.stringify({ jsonrpc: '2.0', id: `${pad}${i}`, method: 'ping' }));
    if (batch.length === 1000) {
      raw.child.stdin.write(batch.join('\n') + '\n');
      batch.length = 0;
    }
  }
  if (batch.length) raw.child.stdin.write(batch.join('\n') + '\n');
}

describe('a client that stops reading stdout', () => {
  test('the 2 s timeout still kills the run, and memory stays bounded', async () => {
    // The script marks its start under the host's /tmp, which its own namespaces would hide.
    const raw = spawnRaw({ SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'off' });
    try {
      await raw.initialize();
      const pidFile = marker();
      const args = { name: 'sleepy', script: 'scripts/sleepy.js', args: [pidFile] };
      const token = await tokenFor(raw, args);
      const rssBefore = rssKiB(raw.child.pid);
      raw.child.stdout.pause();
      raw.send(call('run', { ...args, confirmToken: token }));
      // About 33 MB of answers, far over the pipe and the 4 MiB queue cap.
      flood(raw, 100000);
      await waitFor(`the script starts (stderr: ${raw.stderr().slice(-1000)})`, () => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 15000);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      await waitFor(`the run (pid ${pid}) is killed at its 2 s limit while the client reads nothing`, () => !alive(pid), 15000);
      assert.equal(raw.child.exitCode, null, `the broker is still serving; stderr:\n${raw.stderr().slice(-2000)}`);
      const grown = rssKiB(raw.child.pid) - rssBefore;
      // Uncapped, the queue alone would hold over 32 MiB.
      assert.ok(grown < 20 * 1024, `the broker grew by ${grown} KiB while the client read nothing`);
    } finally {
      raw.kill();
    }
  });

  test('SIGTERM still stops the broker', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize();
      raw.child.stdout.pause();
      flood(raw, 30000);
      await sleep(1000);
      raw.child.kill('SIGTERM');
      const exit = await Promise.race([raw.exited, sleep(15000).then(() => 'still running')]);
      assert.deepEqual(exit, { code: 0, signal: null }, `SIGTERM while stalled; stderr:\n${raw.stderr().slice(-2000)}`);
    } finally {
      raw.kill();
    }
  });

  test('a client that never reads again is dropped after the 30 s grace', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize();
      raw.child.stdout.pause();
      flood(raw, 20000);
      const exit = await Promise.race([raw.exited, sleep(60000).then(() => 'still running')]);
      assert.deepEqual(exit, { code: 0, signal: null }, `stderr:\n${raw.stderr().slice(-2000)}`);
      assert.match(raw.stderr(), /read none of .* queued byte\(s\) for 30 s; dropping it/);
    } finally {
      raw.kill();
    }
  });

  test('a slow reader gets every answer, once and in order', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize();
      raw.child.stdout.pause();
      flood(raw, 30000);
      await sleep(500);
      raw.child.stdout.resume();
      const pad = 'p'.repeat(300);
      for (let i = 0; i < 30000; i++) {
        const answer = await raw.next(20000);
        assert.equal(answer.id, `${pad}${i}`);
      }
      const { code } = await raw.end();
      assert.equal(code, 0);
    } finally {
      raw.kill();
    }
  });
});

describe('request ids', () => {
  test('an id reused while its request is in flight gets one answer, the first request\'s', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize();
      const args = { name: 'sleepy', script: 'scripts/pause.js' };
      const token = await tokenFor(raw, args);
      raw.child.stdin.write(
        JSON.stringify(call('dup', { ...args, confirmToken: token })) + '\n' +
          JSON.stringify({ jsonrpc: '2.0', id: 'dup', method: 'ping' }) + '\n',
      );
      const first = await raw.next(15000);
      assert.equal(first.id, 'dup');
      assert.ok(first.result?.content, `the run's result: ${JSON.stringify(first)}`);
      // Anything said about the duplicate was said before the run's result or before this.
      const alive = await raw.request({ jsonrpc: '2.0', id: 'alive', method: 'ping' });
      assert.equal(alive.id, 'alive');
      const underDup = raw.lines.filter((l) => JSON.parse(l).id === 'dup');
      assert.equal(underDup.length, 1, `answers under "dup": ${underDup.join('\n')}`);
      assert.match(raw.stderr(), /reuses the id "dup"/);
      const { code } = await raw.end();
      assert.equal(code, 0);
    } finally {
      raw.kill();
    }
  });

  for (const [revision, expectId] of [
    ['2025-11-25', 'omitted'],
    ['2025-06-18', null],
    ['2024-11-05', null],
  ]) {
    test(`a malformed line under ${revision}: the error's id is ${expectId}`, async () => {
      const raw = spawnRaw({ SKILLS_DIR: root });
      try {
        const init = await raw.initialize(revision);
        assert.equal(init.result.protocolVersion, revision);
        for (const bad of ['{"jsonrpc": "2.0", "id": 1, "method": ', '[]', '{"jsonrpc":"2.0","id":[1],"method":"ping"}']) {
          const answer = await raw.request(bad);
          assert.ok(answer.error, JSON.stringify(answer));
          if (expectId === 'omitted') {
            assert.equal(Object.hasOwn(answer, 'id'), false, JSON.stringify(answer));
          } else {
            assert.equal(answer.id, null, JSON.stringify(answer));
          }
        }
        const { code } = await raw.end();
        assert.equal(code, 0);
      } finally {
        raw.kill();
      }
    });
  }

  test('a malformed line before initialize: id null (JSON-RPC 2.0)', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      const answer = await raw.request('not json');
      assert.equal(answer.id, null);
      await raw.end();
    } finally {
      raw.kill();
    }
  });
});

/** Runs the broker with the given stdio; resolves with its exit and what it wrote. */
function runWith(stdio, timeoutMs = 15000) {
  return new Promise((resolve) => {
    const child = spawn(BIN, [], { env: serverEnv({ SKILLS_DIR: root }), stdio });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const REQUESTS = [
  { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'file', version: '0' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'ping' },
  { jsonrpc: '2.0', id: 3, method: 'tools/list' },
]
  .map((m) => JSON.stringify(m))
  .join('\n');

describe('stdin and stdout the broker cannot poll', () => {
  test('stdin from /dev/null: exit 0 at once', async () => {
    const devnull = openSync('/dev/null', 'r');
    try {
      const r = await runWith([devnull, 'pipe', 'pipe']);
      assert.deepEqual([r.code, r.signal], [0, null], r.stderr);
      assert.equal(r.stdout, '');
    } finally {
      closeSync(devnull);
    }
  });

  test('stdin from a regular file: every request answered, then exit 0', async () => {
    const path = join(base, 'requests.jsonl');
    writeFileSync(path, REQUESTS); // no newline after the last line
    const fd = openSync(path, 'r');
    try {
      const r = await runWith([fd, 'pipe', 'pipe']);
      assert.deepEqual([r.code, r.signal], [0, null], r.stderr);
      const ids = r.stdout.trim().split('\n').map((l) => JSON.parse(l).id);
      assert.deepEqual(ids, [1, 2, 3]);
    } finally {
      closeSync(fd);
    }
  });

  test('stdout to a regular file gets every answer', async () => {
    const inPath = join(base, 'requests2.jsonl');
    const outPath = join(base, 'answers.jsonl');
    writeFileSync(inPath, REQUESTS + '\n');
    writeFileSync(outPath, '');
    const inFd = openSync(inPath, 'r');
    const outFd = openSync(outPath, 'a');
    try {
      const r = await runWith([inFd, outFd, 'pipe']);
      assert.deepEqual([r.code, r.signal], [0, null], r.stderr);
    } finally {
      closeSync(inFd);
      closeSync(outFd);
    }
    const ids = readFileSync(outPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l).id);
    assert.deepEqual(ids, [1, 2, 3]);
  });

  test('stdin and stdout one socket (systemd Accept=yes): answers, then exit 0 on EOF', async () => {
    const sockPath = join(base, 'accept.sock');
    // pauseOnConnect: this process never reads the broker's requests off the socket.
    const server = net.createServer({ pauseOnConnect: true });
    await new Promise((r) => server.listen(sockPath, r));
    try {
      const accepted = new Promise((r) => server.once('connection', r));
      const client = net.connect(sockPath);
      const sock = await accepted;
      const exit = runWith([sock, sock, 'pipe']);
      sock.destroy(); // the broker holds its own copy
      let got = '';
      client.on('data', (d) => (got += d));
      client.write(REQUESTS + '\n');
      await waitFor('three answers', () => got.split('\n').filter(Boolean).length >= 3, 15000);
      client.end(); // half-close: EOF on the broker's stdin
      const r = await exit;
      assert.deepEqual([r.code, r.signal], [0, null], r.stderr);
      assert.deepEqual(got.trim().split('\n').map((l) => JSON.parse(l).id), [1, 2, 3]);
      client.destroy();
    } finally {
      server.close();
    }
  });
});
