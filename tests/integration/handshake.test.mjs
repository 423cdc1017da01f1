// The handshake and the tool catalogue, through the official SDK client and over raw
// stdio (to choose the protocol version the client offers).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildDiscoveryTree, removeDir } from './fixtures.mjs';
import { connect, McpError, spawnRaw } from './lib.mjs';

const VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];

let tree;
before(() => {
  tree = buildDiscoveryTree();
});
after(() => removeDir(tree.base));

describe('initialize over raw stdio', () => {
  for (const version of VERSIONS) {
    test(`echoes protocolVersion ${version}`, async () => {
      const raw = spawnRaw({ SKILLS_DIR: tree.rootA });
      try {
        const answer = await raw.initialize(version);
        assert.equal(answer.id, 'init');
        assert.equal(answer.error, undefined, JSON.stringify(answer.error));
        assert.equal(answer.result.protocolVersion, version);
        assert.equal(answer.result.serverInfo.name, 'skill-mcp');
        assert.equal(typeof answer.result.serverInfo.version, 'string');
        assert.ok(answer.result.serverInfo.version.length > 0);
        for (const cap of ['tools', 'prompts', 'resources']) {
          assert.equal(typeof answer.result.capabilities[cap], 'object', `capability ${cap} advertised`);
        }
        const pong = await raw.request({ jsonrpc: '2.0', id: 2, method: 'ping' });
        assert.deepEqual(pong, { jsonrpc: '2.0', id: 2, result: {} });
        raw.assertStdoutIsJsonRpc();
        const { code } = await raw.end();
        assert.equal(code, 0, 'stdin EOF ends the server with status 0');
      } finally {
        raw.kill();
      }
    });
  }

  test('an unsupported protocolVersion is answered with one the server supports', async () => {
    const raw = spawnRaw({ SKILLS_DIR: tree.rootA });
    try {
      const answer = await raw.initialize('1999-01-01');
      assert.ok(answer.result, JSON.stringify(answer));
      assert.ok(VERSIONS.includes(answer.result.protocolVersion), answer.result.protocolVersion);
    } finally {
      raw.kill();
    }
  });
});

describe('through the SDK client', () => {
  let conn;
  before(async () => {
    conn = await connect({ env: { SKILLS_DIR: tree.rootA } });
  });
  after(async () => conn?.close());

  test('serverInfo and capabilities', () => {
    const info = conn.client.getServerVersion();
    assert.equal(info.name, 'skill-mcp');
    assert.match(info.version, /^\d+\.\d+\.\d+/);
    const caps = conn.client.getServerCapabilities();
    assert.ok(caps.tools && caps.prompts && caps.resources, JSON.stringify(caps));
  });

  test('ping answers {}', async () => {
    const result = await conn.client.ping();
    assert.deepEqual(result, {});
  });

  test('tools/list: the four tools with their schemas and annotations', async () => {
    const { tools } = await conn.client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(Object.keys(byName).sort(), ['skill_file', 'skill_list', 'skill_load', 'skill_run']);
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', `${tool.name} input schema is an object schema`);
      assert.equal(typeof tool.description, 'string');
    }
    const readOnly = { readOnlyHint: true, idempotentHint: true, openWorldHint: false };
    for (const name of ['skill_list', 'skill_load', 'skill_file']) {
      const a = byName[name].annotations;
      assert.equal(typeof a.title, 'string', `${name} annotation title`);
      for (const [k, v] of Object.entries(readOnly)) assert.equal(a[k], v, `${name}.${k}`);
    }
    const run = byName.skill_run.annotations;
    assert.equal(typeof run.title, 'string');
    assert.equal(run.readOnlyHint, false);
    assert.equal(run.destructiveHint, true);
    assert.equal(run.idempotentHint, false);
    assert.equal(run.openWorldHint, true);

    assert.deepEqual(byName.skill_list.inputSchema.properties ?? {}, {});
    assert.ok(!byName.skill_list.inputSchema.required || byName.skill_list.inputSchema.required.length === 0);

    const load = byName.skill_load.inputSchema;
    assert.equal(load.properties.name.type, 'string');
    assert.equal(load.properties.name.minLength, 1);
    assert.deepEqual(load.required, ['name']);

    const file = byName.skill_file.inputSchema;
    assert.equal(file.properties.name.type, 'string');
    assert.equal(file.properties.paths.type, 'array');
    assert.equal(file.properties.paths.items.type, 'string');
    // The item bound and description the reference publishes on the item schema.
    assert.equal(file.properties.paths.items.minLength, 1);
    assert.equal(file.properties.paths.items.description, 'Path relative to the skill directory');
    assert.equal(file.properties.paths.minItems, 1);
    assert.equal(file.properties.paths.maxItems, 8);
    assert.deepEqual([...file.required].sort(), ['name', 'paths']);

    // Worded for a model: what it can run, not the declaration's YAML key.
    assert.match(byName.skill_run.description, /the scripts the skill declares/);
    assert.doesNotMatch(byName.skill_run.description, /mcp-host/);

    const runSchema = byName.skill_run.inputSchema;
    for (const k of ['name', 'script', 'confirmToken']) assert.equal(runSchema.properties[k].type, 'string', k);
    assert.equal(runSchema.properties.args.type, 'array');
    assert.equal(runSchema.properties.args.items.type, 'string');
    assert.equal(runSchema.properties.args.maxItems, 64);
    assert.deepEqual([...runSchema.required].sort(), ['name', 'script']);
  });

  test('an unknown tool is JSON-RPC error -32602', async () => {
    await assert.rejects(
      conn.client.callTool({ name: 'skill_nope', arguments: {} }),
      (err) => err instanceof McpError && err.code === -32602,
    );
  });
});
