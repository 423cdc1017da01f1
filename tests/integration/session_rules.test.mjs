// The session's lifecycle rules as a client meets them (docs/wire.md §10): JSON-RPC
// batches under 2025-03-26 only, and a second initialize refused with the session
// unchanged. Raw JSON lines, and the official SDK client.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { InitializeResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { McpError, connect, spawnRaw } from './lib.mjs';

let base;
let root;
before(() => {
  base = freshDir('skill-mcp-session-');
  root = join(base, 'skills');
  mkdirSync(join(root, 'alpha'), { recursive: true });
  writeFileSync(join(root, 'alpha', 'SKILL.md'), skillMd('name: alpha\ndescription: First.', '\n# A\n'));
});
after(() => removeDir(base));

async function rawServer(protocolVersion) {
  const raw = spawnRaw({ SKILLS_DIR: root });
  const init = await raw.initialize(protocolVersion);
  assert.equal(init.result?.protocolVersion, protocolVersion, JSON.stringify(init));
  return raw;
}

const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('JSON-RPC batches', () => {
  test('2025-03-26: a batch is answered as a batch, requests only, in order', async () => {
    const raw = await rawServer('2025-03-26');
    try {
      raw.send([
        ping(1),
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 'two', method: 'tools/call', params: { name: 'skill_list', arguments: {} } },
        { jsonrpc: '2.0', id: 3, method: 'no/such' },
        42,
      ]);
      const answer = await raw.next();
      assert.ok(Array.isArray(answer), JSON.stringify(answer));
      assert.equal(answer.length, 4, 'no answer for the notification');
      assert.deepEqual(answer[0], { jsonrpc: '2.0', id: 1, result: {} });
      assert.equal(answer[1].id, 'two');
      assert.equal(JSON.parse(answer[1].result.content[0].text).skills[0].name, 'alpha');
      assert.equal(answer[2].error.code, -32601);
      assert.equal(answer[3].id, null);
      assert.equal(answer[3].error.code, -32600);
    } finally {
      raw.kill();
    }
  });

  test('2025-03-26: notifications only get nothing; an empty batch is one Invalid Request', async () => {
    const raw = await rawServer('2025-03-26');
    try {
      raw.send([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
      raw.send([]);
      const empty = await raw.next();
      assert.ok(!Array.isArray(empty), 'an empty batch is answered with one error, not an array');
      assert.equal(empty.error.code, -32600);
      assert.equal(empty.id, null);
      assert.equal(raw.lines.length, 2, 'the notification-only batch wrote nothing');
    } finally {
      raw.kill();
    }
  });

  test('2025-03-26: a batch over the entry bound is refused whole, and serving goes on', async () => {
    const raw = await rawServer('2025-03-26');
    try {
      raw.send(Array.from({ length: 65 }, (_, i) => ping(i)));
      const refused = await raw.next();
      assert.equal(refused.error?.code, -32600, JSON.stringify(refused));
      assert.match(refused.error.message, /at most 64/);
      raw.send(Array.from({ length: 64 }, (_, i) => ping(i)));
      const served = await raw.next();
      assert.equal(served.length, 64);
    } finally {
      raw.kill();
    }
  });

  for (const version of ['2024-11-05', '2025-06-18', '2025-11-25']) {
    test(`${version}: a batch is refused as one Invalid Request`, async () => {
      const raw = await rawServer(version);
      try {
        raw.send([ping(1), ping(2)]);
        const answer = await raw.next();
        assert.ok(!Array.isArray(answer), JSON.stringify(answer));
        assert.equal(answer.error.code, -32600);
        assert.match(answer.error.message, /2025-03-26/);
        const pong = await raw.request(ping('after'));
        assert.deepEqual(pong.result, {});
      } finally {
        raw.kill();
      }
    });
  }

  test('before initialize a batch is refused', async () => {
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      raw.send([ping(1)]);
      const answer = await raw.next();
      assert.equal(answer.error?.code, -32600, JSON.stringify(answer));
    } finally {
      raw.kill();
    }
  });
});

describe('a second initialize', () => {
  test('raw: refused with -32600; the negotiated revision and batches stay', async () => {
    const raw = await rawServer('2025-03-26');
    try {
      const again = await raw.request({
        jsonrpc: '2.0',
        id: 'again',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      });
      assert.equal(again.id, 'again');
      assert.equal(again.error?.code, -32600, JSON.stringify(again));
      // Still 2025-03-26: a batch is answered as a batch.
      raw.send([ping('b')]);
      assert.deepEqual(await raw.next(), [{ jsonrpc: '2.0', id: 'b', result: {} }]);
    } finally {
      raw.kill();
    }
  });

  test('SDK client: refused with -32600; the session keeps serving', async () => {
    const conn = await connect({ env: { SKILLS_DIR: root } });
    try {
      await assert.rejects(
        conn.client.request(
          {
            method: 'initialize',
            params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'again', version: '1' } },
          },
          InitializeResultSchema,
        ),
        (err) => err instanceof McpError && err.code === -32600,
      );
      const tools = await conn.client.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'skill_list'));
    } finally {
      await conn.close();
    }
  });
});
