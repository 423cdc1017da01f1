// The 2026-07-28 revision on stdio beside the 2025 ones (docs/wire.md §8), driven by raw
// JSON lines: stateless requests without initialize, server/discover, the fields every
// 2026 result carries, the error codes, the era rules, and the Multi Round-Trip
// confirmation of skill_run. Every run case checks through the marker file whether
// anything ran.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildRunTree, removeDir } from './fixtures.mjs';
import { sleep, spawnRaw } from './lib.mjs';

const REV = '2026-07-28';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const ELICITING = { elicitation: {} };

let tree;
let seq = 0;
let ids = 0;
before(() => {
  tree = buildRunTree();
});
after(() => removeDir(tree.base));

function marker() {
  seq += 1;
  return join(tree.markers, `r${seq}`);
}
function runs(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}
function runEnv(extra = {}) {
  return { SKILLS_DIR: tree.root, SKILL_MCP_NAMESPACES: 'off', ...extra };
}

/** params with the 2026 envelope. */
function meta(params = {}, capabilities = {}, version = REV) {
  return {
    ...params,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientCapabilities': capabilities,
      'io.modelcontextprotocol/clientInfo': { name: 'rev2026-test', version: '0' },
    },
  };
}

async function ask(raw, method, params) {
  ids += 1;
  const id = ids;
  const answer = await raw.request({ jsonrpc: '2.0', id, method, params });
  assert.equal(answer.id, id, JSON.stringify(answer));
  return answer;
}

function toolJson(answer) {
  assert.ok(answer.result, JSON.stringify(answer));
  return { result: answer.result, json: JSON.parse(answer.result.content[0].text) };
}

function runCall(raw, { mark, args, capabilities = ELICITING, state, responses, script } = {}) {
  const p = { name: 'skill_run', arguments: { name: 'marker', script: script ?? 'scripts/mark.js', args: args ?? [mark] } };
  if (state !== undefined) p.requestState = state;
  if (responses !== undefined) p.inputResponses = responses;
  return ask(raw, 'tools/call', meta(p, capabilities));
}

const accept = { confirm: { action: 'accept', content: { approve: true } } };
const decline = { confirm: { action: 'decline' } };

function assertInputRequired(answer) {
  const r = answer.result;
  assert.ok(r, JSON.stringify(answer));
  assert.equal(r.resultType, 'input_required');
  assert.equal(typeof r.requestState, 'string');
  assert.deepEqual(Object.keys(r.inputRequests), ['confirm']);
  assert.equal(r.inputRequests.confirm.method, 'elicitation/create');
  assert.equal(r._meta[SERVER_INFO].name, 'skill-mcp');
  assert.equal('ttlMs' in r, false, 'an input_required result carries no cache hints');
  return r;
}

function assertRejected(answer, error) {
  const { result, json } = toolJson(answer);
  assert.equal(result.isError, true, JSON.stringify(json));
  assert.equal(json.status, 'confirmation-rejected');
  assert.equal(json.error, error, JSON.stringify(json));
}

describe('stateless 2026-07-28 requests', () => {
  let raw;
  before(() => {
    raw = spawnRaw(runEnv());
  });
  after(async () => {
    await raw.end();
    raw.assertStdoutIsJsonRpc();
  });

  test('server/discover without initialize: versions, capabilities, serverInfo in _meta', async () => {
    const a = await ask(raw, 'server/discover', meta());
    const r = a.result;
    assert.ok(r, JSON.stringify(a));
    assert.equal(r.resultType, 'complete');
    assert.deepEqual(r.supportedVersions, [REV]);
    assert.deepEqual(r.capabilities.extensions, { 'io.modelcontextprotocol/skills': { directoryRead: true } });
    for (const c of ['tools', 'prompts', 'resources']) {
      assert.deepEqual(r.capabilities[c], {}, `${c}: no listChanged without subscriptions/listen`);
    }
    assert.equal(r._meta[SERVER_INFO].name, 'skill-mcp');
    assert.equal(typeof r._meta[SERVER_INFO].version, 'string');
    assert.equal(typeof r.instructions, 'string');
    assert.equal(r.cacheScope, 'private');
  });

  test('list results carry resultType, ttlMs and cacheScope first, then the 2025 body', async () => {
    for (const [method, key] of [
      ['tools/list', 'tools'],
      ['prompts/list', 'prompts'],
      ['resources/list', 'resources'],
      ['resources/templates/list', 'resourceTemplates'],
    ]) {
      const a = await ask(raw, method, meta());
      const r = a.result;
      assert.ok(r, `${method}: ${JSON.stringify(a)}`);
      assert.deepEqual(Object.keys(r).slice(0, 4), ['resultType', 'ttlMs', 'cacheScope', '_meta'], method);
      assert.equal(r.resultType, 'complete');
      // The live catalogue is on by default: a list may change, and 2026 is not told.
      assert.equal(r.ttlMs, method === 'resources/templates/list' ? 3600000 : 0, method);
      assert.equal(r.cacheScope, 'private');
      assert.ok(Array.isArray(r[key]), `${method} keeps ${key}`);
    }
  });

  test('the skills extension keeps its own resultType and cache hints, once each, and gains _meta', async () => {
    const before = raw.lines.length;
    const r = (await ask(raw, 'skills/list', meta())).result;
    assert.equal(r.resultType, 'complete');
    assert.equal(r.ttlMs, 0);
    assert.equal(r.cacheScope, 'private');
    assert.equal(r._meta[SERVER_INFO].name, 'skill-mcp');
    const line = raw.lines[before];
    assert.equal(line.split('"resultType"').length, 2, 'resultType is written once');
    assert.equal(line.split('"ttlMs"').length, 2, 'ttlMs is written once');
  });

  test('resources/directory/read gains ttlMs 0 and cacheScope, once each, beside its own resultType', async () => {
    const before = raw.lines.length;
    const r = (await ask(raw, 'resources/directory/read', meta({ uri: 'skill://marker' }))).result;
    assert.ok(r, raw.lines[before]);
    assert.equal(r.resultType, 'complete');
    assert.equal(r.ttlMs, 0, 'like the extension\'s other answers and resources/read');
    assert.equal(r.cacheScope, 'private');
    assert.equal(r._meta[SERVER_INFO].name, 'skill-mcp');
    assert.ok(r.resources.some((c) => c.uri === 'skill://marker/scripts' && c.mimeType === 'inode/directory'));
    const line = raw.lines[before];
    assert.equal(line.split('"resultType"').length, 2, 'resultType is written once');
    assert.equal(line.split('"ttlMs"').length, 2, 'ttlMs is written once');
  });

  test('reads are never cached (ttlMs 0); tools/call has resultType but no cache hints', async () => {
    const list = (await ask(raw, 'resources/list', meta())).result;
    const uri = list.resources[0].uri;
    const read = (await ask(raw, 'resources/read', meta({ uri }))).result;
    assert.equal(read.resultType, 'complete');
    assert.equal(read.ttlMs, 0);
    assert.equal(read.contents[0].uri, uri);
    const call = (await ask(raw, 'tools/call', meta({ name: 'skill_list', arguments: {} }))).result;
    assert.equal(call.resultType, 'complete');
    assert.equal('ttlMs' in call, false);
    assert.equal(call._meta[SERVER_INFO].name, 'skill-mcp');
  });

  test('a missing resource is -32602 with data.uri', async () => {
    const uri = 'skill://no-such-skill/SKILL.md';
    const a = await ask(raw, 'resources/read', meta({ uri }));
    assert.equal(a.error?.code, -32602, JSON.stringify(a));
    assert.equal(a.error.data.uri, uri);
  });

  test('an unsupported version is -32022 with supported and requested', async () => {
    for (const v of ['2025-11-25', '2099-01-01']) {
      const a = await ask(raw, 'tools/list', meta({}, {}, v));
      assert.equal(a.error?.code, -32022, JSON.stringify(a));
      assert.deepEqual(a.error.data, { supported: [REV], requested: v });
    }
  });

  test('a malformed envelope is -32602', async () => {
    const noCaps = await ask(raw, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': REV } });
    assert.equal(noCaps.error?.code, -32602, JSON.stringify(noCaps));
    const notString = await ask(raw, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': 20260728, 'io.modelcontextprotocol/clientCapabilities': {} } });
    assert.equal(notString.error?.code, -32602, JSON.stringify(notString));
  });

  test('initialize and ping do not exist in 2026-07-28; a request without the envelope is refused', async () => {
    const init = await ask(raw, 'initialize', meta({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } }));
    assert.equal(init.error?.code, -32601, JSON.stringify(init));
    const ping = await ask(raw, 'ping', meta());
    assert.equal(ping.error?.code, -32601, JSON.stringify(ping));
    const bare = await ask(raw, 'tools/list', {});
    assert.equal(bare.error?.code, -32602, JSON.stringify(bare));
    const legacyInit = await ask(raw, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } });
    assert.equal(legacyInit.error?.code, -32601, JSON.stringify(legacyInit));
  });
});

describe('the eras on one connection', () => {
  test('server/discover without the envelope is -32602', async () => {
    const raw = spawnRaw(runEnv());
    try {
      const a = await ask(raw, 'server/discover', {});
      assert.equal(a.error?.code, -32602, JSON.stringify(a));
    } finally {
      await raw.end();
    }
  });

  test('after a 2025 initialize, a 2026 request is -32022 naming the negotiated version', async () => {
    const raw = spawnRaw(runEnv());
    try {
      const init = await raw.initialize('2025-11-25');
      assert.equal(init.result.protocolVersion, '2025-11-25');
      const a = await ask(raw, 'tools/list', meta());
      assert.equal(a.error?.code, -32022, JSON.stringify(a));
      assert.deepEqual(a.error.data, { supported: ['2025-11-25'], requested: REV });
      const legacy = await ask(raw, 'tools/list', {});
      assert.ok(Array.isArray(legacy.result.tools));
      assert.equal('resultType' in legacy.result, false, 'the 2025 answer is unchanged');
      const dir = await ask(raw, 'resources/directory/read', { uri: 'skill://marker' });
      assert.deepEqual(Object.keys(dir.result), ['resultType', 'resources'], 'no 2026 cache hints in 2025');
    } finally {
      await raw.end();
    }
  });

  test('a client may probe server/discover, then initialize on the same connection', async () => {
    const raw = spawnRaw(runEnv());
    try {
      const probe = await ask(raw, 'server/discover', meta());
      assert.deepEqual(probe.result.supportedVersions, [REV]);
      const init = await raw.initialize('2025-06-18');
      assert.equal(init.result.protocolVersion, '2025-06-18');
    } finally {
      await raw.end();
    }
  });
});

describe('skill_run under 2026-07-28: Multi Round-Trip confirmation', () => {
  let raw;
  before(() => {
    raw = spawnRaw(runEnv());
  });
  after(async () => {
    await raw.end();
    raw.assertStdoutIsJsonRpc();
  });

  test('input_required shows the willRun prompt; the retry with approve runs once', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    const prompt = first.inputRequests.confirm.params;
    assert.match(prompt.message, /marker/);
    assert.ok(prompt.message.includes(mark), 'the prompt shows the exact arguments');
    assert.deepEqual(prompt.requestedSchema.required, ['approve']);
    assert.equal(runs(mark), 0, 'nothing runs before the answer');
    const second = await runCall(raw, { mark, state: first.requestState, responses: accept });
    const { result, json } = toolJson(second);
    assert.equal(result.resultType, 'complete');
    assert.notEqual(result.isError, true, JSON.stringify(json));
    assert.equal(json.exitCode, 0, JSON.stringify(json));
    assert.equal(runs(mark), 1);
    // The same retry again: the state is spent.
    assertRejected(await runCall(raw, { mark, state: first.requestState, responses: accept }), 'TOKEN_REUSED');
    assert.equal(runs(mark), 1, 'a replayed retry runs nothing');
  });

  test('altered arguments on the retry: DRAFT_CHANGED, nothing runs, the state stays unspent', async () => {
    const mark = marker();
    const other = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    const changed = await runCall(raw, { mark: other, state: first.requestState, responses: accept });
    assertRejected(changed, 'DRAFT_CHANGED');
    assert.equal(runs(mark) + runs(other), 0);
    const ok = toolJson(await runCall(raw, { mark, state: first.requestState, responses: accept }));
    assert.notEqual(ok.result.isError, true, JSON.stringify(ok.json));
    assert.equal(runs(mark), 1);
  });

  test('decline: the declined-prompt answer, nothing runs, nothing is spent', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    for (let i = 0; i < 2; i++) {
      // A decline authorises nothing, so it is not recorded: replayed, it declines again.
      const { result, json } = toolJson(await runCall(raw, { mark, state: first.requestState, responses: decline }));
      assert.notEqual(result.isError, true);
      assert.equal(json.confirmed, false);
      assert.equal(json.cancelled, true);
      assert.match(json.note, /declin/i);
    }
    assert.equal(runs(mark), 0);
    // Only the approval that runs is spent: it runs once, and its replay is TOKEN_REUSED.
    const ran = toolJson(await runCall(raw, { mark, state: first.requestState, responses: accept }));
    assert.equal(ran.json.exitCode, 0, JSON.stringify(ran.json));
    assertRejected(await runCall(raw, { mark, state: first.requestState, responses: accept }), 'TOKEN_REUSED');
    assert.equal(runs(mark), 1);
  });

  test('accept without approve true is a decline', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    const answer = { confirm: { action: 'accept', content: { approve: false } } };
    const { json } = toolJson(await runCall(raw, { mark, state: first.requestState, responses: answer }));
    assert.equal(json.cancelled, true);
    assert.equal(runs(mark), 0);
  });

  test('a retry without the answer is asked again with the same state; an answer without a state gets a new round', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    const again = assertInputRequired(await runCall(raw, { mark, state: first.requestState, responses: { other: { action: 'accept' } } }));
    assert.equal(again.requestState, first.requestState);
    const stateless = assertInputRequired(await runCall(raw, { mark, responses: accept }));
    assert.notEqual(stateless.requestState, first.requestState);
    assert.equal(runs(mark), 0, 'an answer bound to no state runs nothing');
  });

  test('a tampered or foreign state is TOKEN_INVALID; a round state is no confirmToken', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    assertRejected(await runCall(raw, { mark, state: first.requestState + 'A', responses: accept }), 'TOKEN_INVALID');
    assertRejected(await runCall(raw, { mark, state: 42, responses: accept }), 'TOKEN_INVALID');
    // Why it matters: the state is handed out before the user answered.
    const asToken = await ask(raw, 'tools/call', meta({ name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [mark], confirmToken: first.requestState } }, {}));
    assertRejected(asToken, 'TOKEN_INVALID');
    assert.equal(runs(mark), 0);
  });

  test('a confirmToken is no round state', async () => {
    const mark = marker();
    const preview = toolJson(await runCall(raw, { mark, capabilities: {} }));
    assert.equal(preview.json.status, 'confirmation-required');
    assertRejected(await runCall(raw, { mark, state: preview.json.confirmToken, responses: accept }), 'TOKEN_INVALID');
    assert.equal(runs(mark), 0);
  });

  test('without the elicitation capability: the preview-and-token flow, in 2026 shape', async () => {
    const mark = marker();
    const preview = toolJson(await runCall(raw, { mark, capabilities: {} }));
    assert.equal(preview.result.resultType, 'complete');
    assert.equal(preview.json.status, 'confirmation-required');
    assert.equal(runs(mark), 0);
    const args = { name: 'marker', script: 'scripts/mark.js', args: [mark], confirmToken: preview.json.confirmToken };
    const done = toolJson(await ask(raw, 'tools/call', meta({ name: 'skill_run', arguments: args }, {})));
    assert.equal(done.json.exitCode, 0, JSON.stringify(done.json));
    assert.equal(runs(mark), 1);
  });

  test('a retry without the elicitation capability is never asked: the token flow, the answer ignored', async () => {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    // The state and an approving answer, from a client that does not offer elicitation:
    // the preview-and-token flow, as for its first request; nothing runs.
    const preview = toolJson(await runCall(raw, { mark, capabilities: {}, state: first.requestState, responses: accept }));
    assert.equal(preview.result.resultType, 'complete');
    assert.equal(preview.json.status, 'confirmation-required', JSON.stringify(preview.json));
    assert.equal(runs(mark), 0);
    // A confirmToken is the approval in that flow; the answer beside it changes nothing.
    const args = { name: 'marker', script: 'scripts/mark.js', args: [mark], confirmToken: preview.json.confirmToken };
    const done = toolJson(await ask(raw, 'tools/call', meta({ name: 'skill_run', arguments: args, inputResponses: accept }, {})));
    assert.equal(done.json.exitCode, 0, JSON.stringify(done.json));
    assert.equal(runs(mark), 1);
    // The round state was left alone: the eliciting retry still runs once.
    const ran = toolJson(await runCall(raw, { mark, state: first.requestState, responses: accept }));
    assert.equal(ran.json.exitCode, 0, JSON.stringify(ran.json));
    assert.equal(runs(mark), 2);
  });

  test('no server-to-client request is ever written', () => {
    for (const line of raw.lines) {
      const msg = JSON.parse(line);
      assert.ok(!('method' in msg && 'id' in msg), `a request to the client: ${line.slice(0, 200)}`);
    }
  });
});

test('an expired round state is TOKEN_EXPIRED and runs nothing', async () => {
  const raw = spawnRaw(runEnv({ MCP_CONFIRM_TTL_SECONDS: '1' }));
  try {
    const mark = marker();
    const first = assertInputRequired(await runCall(raw, { mark }));
    await sleep(2100);
    assertRejected(await runCall(raw, { mark, state: first.requestState, responses: accept }), 'TOKEN_EXPIRED');
    assert.equal(runs(mark), 0);
  } finally {
    await raw.end();
  }
});

test('MCP_CONFIRM_ELICITATION=off: an eliciting 2026 client gets the preview-and-token flow', async () => {
  const raw = spawnRaw(runEnv({ MCP_CONFIRM_ELICITATION: 'off' }));
  try {
    const mark = marker();
    const { json } = toolJson(await runCall(raw, { mark }));
    assert.equal(json.status, 'confirmation-required');
    assert.equal(runs(mark), 0);
  } finally {
    await raw.end();
  }
});

test('once a connection speaks 2026-07-28, an error about an unknown id carries no id', async () => {
  const raw = spawnRaw(runEnv());
  try {
    raw.send('{"jsonrpc":"2.0","id":');
    const before = await raw.next();
    assert.equal(before.id, null, 'before any 2026 request: id null, as today');
    await ask(raw, 'tools/list', meta());
    raw.send('{"jsonrpc":"2.0","id":');
    const after = await raw.next();
    assert.equal(after.error?.code, -32700, JSON.stringify(after));
    assert.equal('id' in after, false, JSON.stringify(after));
  } finally {
    await raw.end();
  }
});
