// Hostile and broken input over raw stdio (no SDK): the server answers with the
// right JSON-RPC error, never crashes or hangs, keeps serving, writes nothing but
// JSON-RPC on stdout, and exits 0 on stdin EOF.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildDiscoveryTree, removeDir } from './fixtures.mjs';
import { spawnRaw } from './lib.mjs';

let tree;
before(() => {
  tree = buildDiscoveryTree();
});
after(() => removeDir(tree.base));

async function withServer(fn, { initialize = true } = {}) {
  const raw = spawnRaw({ SKILLS_DIR: tree.rootA });
  try {
    if (initialize) {
      const init = await raw.initialize();
      assert.ok(init.result, JSON.stringify(init));
    }
    await fn(raw);
    raw.assertStdoutIsJsonRpc();
    const { code, signal } = await raw.end();
    assert.equal(signal, null, `server killed by ${signal}; stderr:\n${raw.stderr().slice(-2000)}`);
    assert.equal(code, 0, `exit status on EOF; stderr:\n${raw.stderr().slice(-2000)}`);
  } finally {
    raw.kill();
  }
}

async function stillServes(raw, id = 'alive') {
  const pong = await raw.request({ jsonrpc: '2.0', id, method: 'ping' });
  assert.deepEqual(pong, { jsonrpc: '2.0', id, result: {} }, 'the server keeps serving');
}

function toolCall(id, name, args) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

describe('framing and JSON-RPC errors', () => {
  test('invalid JSON: -32700 with id null', () =>
    withServer(async (raw) => {
      const answer = await raw.request('{"jsonrpc": "2.0", "id": 1, "method": ');
      assert.equal(answer.id, null);
      assert.equal(answer.error.code, -32700);
      assert.equal(typeof answer.error.message, 'string');
      await stillServes(raw);
    }));

  test('unknown method: -32601, also before initialize', () =>
    withServer(
      async (raw) => {
        const before = await raw.request({ jsonrpc: '2.0', id: 7, method: 'no/such/method' });
        assert.equal(before.id, 7);
        assert.equal(before.error.code, -32601);
        await raw.initialize();
        const afterInit = await raw.request({ jsonrpc: '2.0', id: 8, method: 'tools/nope' });
        assert.equal(afterInit.id, 8);
        assert.equal(afterInit.error.code, -32601);
      },
      { initialize: false },
    ));

  test('invalid requests: -32600', () =>
    withServer(async (raw) => {
      for (const bad of [
        { jsonrpc: '2.0', id: 11 },
        { jsonrpc: '1.0', id: 12, method: 'ping' },
        { jsonrpc: '2.0', id: 13, method: 42 },
        { jsonrpc: '2.0', id: { nested: true }, method: 'ping' },
        '"just a string"',
        '17',
      ]) {
        const answer = await raw.request(bad);
        assert.equal(answer.error?.code, -32600, `${JSON.stringify(bad)} -> ${JSON.stringify(answer)}`);
      }
      await stillServes(raw);
    }));

  test('a notification gets no answer', () =>
    withServer(async (raw) => {
      raw.send({ jsonrpc: '2.0', method: 'notifications/something-unknown', params: {} });
      raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 999 } });
      raw.send({ jsonrpc: '2.0', method: 'ping' });
      const next = await raw.request({ jsonrpc: '2.0', id: 'after', method: 'ping' });
      assert.deepEqual(next, { jsonrpc: '2.0', id: 'after', result: {} }, 'the first answer is the ping after the notifications');
    }));

  test('a 5 MiB line is refused and the server keeps serving', () =>
    withServer(async (raw) => {
      const huge = JSON.stringify({ jsonrpc: '2.0', id: 'huge', method: 'ping', params: { pad: 'x'.repeat(5 * 1024 * 1024) } });
      raw.send(huge);
      const answer = await raw.next(20000);
      assert.ok(answer.error, `refused: ${JSON.stringify(answer).slice(0, 300)}`);
      assert.ok([-32700, -32600].includes(answer.error.code), JSON.stringify(answer.error));
      await stillServes(raw);
    }));

  test('invalid UTF-8 is refused and the server keeps serving', () =>
    withServer(async (raw) => {
      const line = Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":"utf","method":"tools/call","params":{"name":"skill_load","arguments":{"name":"'),
        Buffer.from([0xff, 0xfe, 0xc3, 0x28]),
        Buffer.from('"}}}'),
      ]);
      raw.send(line);
      const answer = await raw.next();
      assert.ok(answer.error || answer.result?.isError, JSON.stringify(answer));
      // The line is refused as a whole: a parse error, with no id to answer to.
      assert.ok(answer.error, `a JSON-RPC error: ${JSON.stringify(answer)}`);
      assert.ok([-32700, -32600, -32602].includes(answer.error.code), JSON.stringify(answer.error));
      assert.equal(answer.error.code, -32700, JSON.stringify(answer.error));
      assert.equal(answer.id, null, JSON.stringify(answer));
      await stillServes(raw);
    }));

  test('100000-deep nesting is refused without a crash', () =>
    withServer(async (raw) => {
      const depth = 100000;
      raw.send(`{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`);
      const answer = await raw.next(20000);
      assert.ok(answer.error, JSON.stringify(answer).slice(0, 300));
      assert.ok([-32700, -32600].includes(answer.error.code), JSON.stringify(answer.error));
      await stillServes(raw);
    }));

  test('an empty line and a blank line do not break the stream', () =>
    withServer(async (raw) => {
      raw.child.stdin.write('\n   \n');
      raw.send({ jsonrpc: '2.0', id: 'alive', method: 'ping' });
      // Blank lines may be skipped or answered as parse errors; nothing else.
      for (;;) {
        const answer = await raw.next();
        if (answer.id === 'alive') {
          assert.deepEqual(answer.result, {});
          break;
        }
        assert.equal(answer.id, null, JSON.stringify(answer));
        assert.equal(answer.error?.code, -32700, JSON.stringify(answer));
      }
    }));
});

describe('tool arguments of the wrong type: isError naming the argument', () => {
  const cases = [
    ['skill_load', {}, 'name'],
    ['skill_load', { name: 5 }, 'name'],
    ['skill_load', { name: '' }, 'name'],
    ['skill_load', { name: ['good'] }, 'name'],
    ['skill_file', { name: 'good' }, 'paths'],
    ['skill_file', { name: 'good', paths: 'references/guide.md' }, 'paths'],
    ['skill_file', { name: 'good', paths: [1] }, 'paths'],
    ['skill_file', { name: 'good', paths: Array(9).fill('SKILL.md') }, 'paths'],
    ['skill_file', { name: null, paths: ['SKILL.md'] }, 'name'],
    ['skill_run', { script: 'scripts/hello.js' }, 'name'],
    ['skill_run', { name: 'good', script: 7 }, 'script'],
    ['skill_run', { name: 'good' }, 'script'],
    ['skill_run', { name: 'good', script: 'scripts/hello.js', args: 'a b' }, 'args'],
    ['skill_run', { name: 'good', script: 'scripts/hello.js', args: [1, 2] }, 'args'],
    ['skill_run', { name: 'good', script: 'scripts/hello.js', args: Array(65).fill('a') }, 'args'],
    ['skill_run', { name: 'good', script: 'scripts/hello.js', confirmToken: 12 }, 'confirmToken'],
  ];
  for (const tool of ['skill_load', 'skill_file', 'skill_run']) {
    test(tool, () =>
      withServer(async (raw) => {
        let id = 100;
        for (const [name, args, argument] of cases.filter(([t]) => t === tool)) {
          id += 1;
          const answer = await raw.request(toolCall(id, name, args));
          const what = `${name} ${JSON.stringify(args).slice(0, 80)}`;
          assert.equal(answer.id, id);
          assert.ok(answer.result, `${what}: a tool result, not a JSON-RPC error: ${JSON.stringify(answer).slice(0, 300)}`);
          assert.equal(answer.result.isError, true, what);
          const text = answer.result.content?.[0]?.text ?? '';
          assert.ok(text.includes(argument), `${what}: names "${argument}": ${text}`);
        }
        // arguments that are not an object at all
        const notObject = await raw.request({ jsonrpc: '2.0', id: 'na', method: 'tools/call', params: { name: tool, arguments: 'good' } });
        assert.ok(notObject.error || notObject.result?.isError, JSON.stringify(notObject));
        // A tool result naming the argument, like every other argument error.
        assert.equal(notObject.error, undefined, JSON.stringify(notObject));
        assert.equal(notObject.result.isError, true, JSON.stringify(notObject));
        const notObjectJson = JSON.parse(notObject.result.content[0].text);
        assert.equal(notObjectJson.error, 'INVALID_ARGUMENT', JSON.stringify(notObject));
        assert.equal(notObjectJson.argument, 'arguments', JSON.stringify(notObject));
        await stillServes(raw);
      }));
  }
});

describe('lifecycle', () => {
  test('stdin EOF right away exits 0', async () => {
    const raw = spawnRaw({ SKILLS_DIR: tree.rootA });
    try {
      const { code, signal } = await raw.end();
      assert.equal(signal, null);
      assert.equal(code, 0);
      assert.deepEqual(raw.lines, [], 'nothing on stdout without a request');
    } finally {
      raw.kill();
    }
  });

  test('stdin EOF with a partial line exits 0', async () => {
    const raw = spawnRaw({ SKILLS_DIR: tree.rootA });
    try {
      await raw.initialize();
      raw.child.stdin.write('{"jsonrpc":"2.0","id":1,"meth');
      const { code } = await raw.end();
      assert.equal(code, 0);
      raw.assertStdoutIsJsonRpc();
    } finally {
      raw.kill();
    }
  });

  test('a full session through every read tool writes only JSON-RPC on stdout', () =>
    withServer(async (raw) => {
      let id = 0;
      for (const [method, params] of [
        ['tools/list', {}],
        ['tools/call', { name: 'skill_list', arguments: {} }],
        ['tools/call', { name: 'skill_load', arguments: { name: 'good' } }],
        ['tools/call', { name: 'skill_file', arguments: { name: 'good', paths: ['assets/blob.bin', 'docs/pipe.fifo'] } }],
        ['prompts/list', {}],
        ['prompts/get', { name: 'good' }],
        ['resources/list', {}],
        ['resources/read', { uri: 'skill://good/references/guide.md' }],
      ]) {
        id += 1;
        const answer = await raw.request({ jsonrpc: '2.0', id, method, params });
        assert.equal(answer.id, id, method);
        assert.ok(answer.result, `${method}: ${JSON.stringify(answer.error)}`);
      }
    }));
});
