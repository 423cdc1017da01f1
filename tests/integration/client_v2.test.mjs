// The official TypeScript SDK v2 client (@modelcontextprotocol/client, installed under the
// npm alias mcp-client-v2) speaking 2026-07-28 to skill-mcp over stdio (docs/wire.md §8):
// it probes server/discover, picks the modern era, and confirms skill_run through its own
// Multi Round-Trip driver, answering the prompt with the elicitation handler it registered.
// The v1 SDK keeps driving every 2025 test.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildRunTree, removeDir } from './fixtures.mjs';
import { BIN, serverEnv } from './lib.mjs';
import { skipOrRequire } from './required_tools.mjs';

let v2;
try {
  v2 = {
    ...(await import('mcp-client-v2')),
    ...(await import('mcp-client-v2/stdio')),
  };
} catch (err) {
  v2 = { missing: String(err?.message ?? err) };
}
// A missing client SKIPs, or fails under SKILL_MCP_REQUIRE_TOOLS=1 (required_tools.mjs).
const skip = skipOrRequire(
  v2.missing && `SKIP: mcp-client-v2 is not installed (npm ci --prefix tests/integration): ${v2.missing}`,
  'the SDK v2 client (mcp-client-v2)',
);

let tree;
let seq = 0;
before(() => {
  tree = buildRunTree();
});
after(() => removeDir(tree.base));

function marker() {
  seq += 1;
  return join(tree.markers, `v2-${seq}`);
}
function runs(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}

async function connectV2({ onElicit, mode = 'auto' } = {}) {
  const capabilities = onElicit ? { elicitation: {} } : {};
  const client = new v2.Client({ name: 'skill-mcp-v2-test', version: '0.0.1' }, { capabilities, versionNegotiation: { mode } });
  const prompts = [];
  if (onElicit) {
    client.setRequestHandler('elicitation/create', async (request) => {
      prompts.push(request.params);
      return onElicit(request.params);
    });
  }
  const transport = new v2.StdioClientTransport({
    command: BIN,
    env: serverEnv({ SKILLS_DIR: tree.root, SKILL_MCP_NAMESPACES: 'off' }),
    stderr: 'pipe',
  });
  await client.connect(transport);
  return { client, prompts };
}

describe('SDK v2 client, versionNegotiation auto', { skip }, () => {
  test('negotiates 2026-07-28 through server/discover and reads the catalogue', async () => {
    const { client } = await connectV2();
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.equal(client.getServerVersion()?.name, 'skill-mcp');
      assert.ok(client.getServerCapabilities()?.extensions?.['io.modelcontextprotocol/skills']);
      const tools = await client.listTools();
      assert.deepEqual(tools.tools.map((t) => t.name).sort(), ['skill_file', 'skill_list', 'skill_load', 'skill_run']);
      const resources = await client.listResources();
      assert.ok(resources.resources.length > 0);
      const read = await client.readResource({ uri: resources.resources[0].uri });
      assert.equal(read.contents[0].uri, resources.resources[0].uri);
      await assert.rejects(client.readResource({ uri: 'skill://no-such-skill/SKILL.md' }), (err) => err.code === -32602);
    } finally {
      await client.close();
    }
  });

  test('skill_run: the MRTR round shows the prompt, approve runs once', async () => {
    const mark = marker();
    const { client, prompts } = await connectV2({ onElicit: async () => ({ action: 'accept', content: { approve: true } }) });
    try {
      const r = await client.callTool({ name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [mark] } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      const receipt = JSON.parse(r.content[0].text);
      assert.equal(receipt.exitCode, 0, r.content[0].text);
      assert.equal(prompts.length, 1, 'one prompt');
      assert.ok(prompts[0].message.includes(mark), 'the prompt shows the arguments');
      assert.equal(runs(mark), 1);
    } finally {
      await client.close();
    }
  });

  test('skill_run: decline runs nothing', async () => {
    const mark = marker();
    const { client } = await connectV2({ onElicit: async () => ({ action: 'decline' }) });
    try {
      const r = await client.callTool({ name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [mark] } });
      const answer = JSON.parse(r.content[0].text);
      assert.equal(answer.cancelled, true, r.content[0].text);
      assert.equal(runs(mark), 0);
    } finally {
      await client.close();
    }
  });

  test('without an elicitation handler: the preview-and-token flow', async () => {
    const mark = marker();
    const { client } = await connectV2();
    try {
      const args = { name: 'marker', script: 'scripts/mark.js', args: [mark] };
      const first = JSON.parse((await client.callTool({ name: 'skill_run', arguments: args })).content[0].text);
      assert.equal(first.status, 'confirmation-required');
      assert.equal(runs(mark), 0);
      const second = await client.callTool({ name: 'skill_run', arguments: { ...args, confirmToken: first.confirmToken } });
      assert.equal(JSON.parse(second.content[0].text).exitCode, 0);
      assert.equal(runs(mark), 1);
    } finally {
      await client.close();
    }
  });
});

describe('SDK v2 client, default (legacy) mode', { skip }, () => {
  test('still initializes with a 2025 revision', async () => {
    const { client } = await connectV2({ mode: 'legacy' });
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.equal(client.getServerVersion()?.name, 'skill-mcp');
    } finally {
      await client.close();
    }
  });
});
