// The second door: every skill a prompt, every bundled file a skill:// resource.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildDiscoveryTree, removeDir } from './fixtures.mjs';
import { assertKeyOrder, bodyOf, connect, McpError, spawnRaw } from './lib.mjs';

let tree;
before(() => {
  tree = buildDiscoveryTree();
});
after(() => removeDir(tree.base));

describe('prompts', () => {
  let conn;
  before(async () => {
    conn = await connect({ env: { SKILLS_DIR: [tree.rootA, tree.rootB].join(':') } });
  });
  after(async () => conn?.close());

  test('prompts/list: one prompt per skill, {name, title, description}', async () => {
    const { prompts } = await conn.client.listPrompts();
    const names = prompts.map((p) => p.name);
    assert.ok(names.includes('good') && names.includes('heavy') && names.includes('linked-target'), names.join());
    assert.ok(!names.includes('dup') && !names.includes('malformed'));
    for (const p of prompts) assertKeyOrder(p, ['name', 'title', 'description'], `prompt ${p.name}`);
    const good = prompts.find((p) => p.name === 'good');
    assert.ok(good.description.includes('A well-formed skill used by the read-tool tests.'), good.description);
    assert.ok(good.description.includes('When a test needs a skill that has everything.'), good.description);
    assert.equal(typeof good.title, 'string');
  });

  test('prompts/get: one user message, the body verbatim', async () => {
    const result = await conn.client.getPrompt({ name: 'good' });
    assert.equal(result.messages.length, 1);
    const [message] = result.messages;
    assert.equal(message.role, 'user');
    assert.equal(message.content.type, 'text');
    assert.equal(message.content.text, bodyOf(tree.goodMd));
  });

  test('prompts/get for an unknown prompt is a JSON-RPC error', async () => {
    await assert.rejects(conn.client.getPrompt({ name: 'no-such-skill' }), (err) => err instanceof McpError && err.code === -32602);
  });
});

describe('resources', () => {
  let conn;
  before(async () => {
    // The root IS one skill here (layout <root>/SKILL.md), named after the directory.
    conn = await connect({ env: { SKILLS_DIR: tree.good } });
  });
  after(async () => conn?.close());

  test('resources/list: skill:// URIs for bundled files, nothing for a FIFO or an escaping link', async () => {
    const { resources } = await conn.client.listResources();
    const uris = resources.map((r) => r.uri);
    for (const p of ['SKILL.md', 'references/guide.md', 'assets/blob.bin', 'scripts/hello.js']) {
      assert.ok(uris.includes(`skill://good/${p}`), `${p} listed: ${uris}`);
    }
    assert.ok(!uris.some((u) => u.includes('passwd') || u.includes('pipe.fifo')), uris.join());
    for (const r of resources) assert.match(r.uri, /^skill:\/\/good\//);
    // Key order is checked on the wire: the SDK's schema parse rebuilds each object in its
    // own key order, so the client-side object cannot show what the server sent.
    const raw = spawnRaw({ SKILLS_DIR: tree.good });
    try {
      await raw.initialize('2025-06-18');
      const answer = await raw.request({ jsonrpc: '2.0', id: 2, method: 'resources/list' });
      assert.ok(answer.result.resources.length > 0);
      for (const r of answer.result.resources) {
        assertKeyOrder(r, ['uri', 'name', 'title', 'mimeType'], `resource ${r.uri} on the wire`);
      }
    } finally {
      await raw.end();
    }
    const guide = resources.find((r) => r.uri === 'skill://good/references/guide.md');
    assert.equal(guide.mimeType, 'text/markdown');
  });

  test('resources/read: text', async () => {
    const result = await conn.client.readResource({ uri: 'skill://good/references/guide.md' });
    assert.equal(result.contents.length, 1);
    const [c] = result.contents;
    assert.deepEqual(Object.keys(c), ['uri', 'mimeType', 'text']);
    assert.equal(c.uri, 'skill://good/references/guide.md');
    assert.equal(c.mimeType, 'text/markdown');
    assert.equal(c.text, readFileSync(join(tree.good, 'references/guide.md'), 'utf8'));
  });

  test('resources/read: binary as a base64 blob', async () => {
    const result = await conn.client.readResource({ uri: 'skill://good/assets/blob.bin' });
    const [c] = result.contents;
    assert.deepEqual(Object.keys(c), ['uri', 'mimeType', 'blob']);
    assert.equal(c.mimeType, 'application/octet-stream');
    assert.deepEqual(Buffer.from(c.blob, 'base64'), readFileSync(join(tree.good, 'assets/blob.bin')));
  });

  test('resources/read decides text or blob as skill_file does (invalid UTF-8 is a blob)', async () => {
    const result = await conn.client.readResource({ uri: 'skill://good/assets/latin1.txt' });
    const [c] = result.contents;
    assert.equal(c.text, undefined);
    assert.equal(c.mimeType, 'text/plain');
    assert.deepEqual(Buffer.from(c.blob, 'base64'), readFileSync(join(tree.good, 'assets/latin1.txt')));
  });

  test('resources/read: an escaping, refused or unknown URI is an error', async () => {
    for (const uri of [
      'skill://good/../rootB/heavy/small.txt',
      'skill://good/docs/passwd-link',
      'skill://good/docs/pipe.fifo',
      'skill://good/%2e%2e/outside/secret.txt',
      'skill://good//etc/passwd',
      'skill://good/references\\guide.md',
      'skill://no-such-skill/SKILL.md',
      'file:///etc/passwd',
    ]) {
      await assert.rejects(conn.client.readResource({ uri }), (err) => err instanceof McpError, uri);
    }
  });
});

describe('resources over a large tree', () => {
  test('at most 500 resources are listed', async () => {
    const conn = await connect({ env: { SKILLS_DIR: tree.rootA } });
    try {
      const { resources } = await conn.client.listResources();
      assert.ok(resources.length > 0);
      assert.ok(resources.length <= 500, `${resources.length} resources`);
    } finally {
      await conn.close();
    }
  });
});
