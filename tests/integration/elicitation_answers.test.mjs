// The answer to a confirmation prompt is the client's: whatever its shape, nothing runs
// unless it is exactly an accept with approve === true, and the server keeps serving.
// Sent over raw stdio, because the SDK client validates answers before sending them.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { buildRunTree, removeDir } from './fixtures.mjs';
import { spawnRaw } from './lib.mjs';

let tree;
before(() => {
  tree = buildRunTree();
});
after(() => removeDir(tree.base));

// Asks for a run, answers the prompt with `answer` (a JSON-RPC response body: result or
// error), and returns the tool result; the server must still answer a ping afterwards.
async function answerPrompt(answer, marker) {
  // Markers live under the host's /tmp, which the run's own namespaces (auto) would hide.
  const raw = spawnRaw({ SKILLS_DIR: tree.root, SKILL_MCP_NAMESPACES: 'off' });
  try {
    await raw.initialize('2025-06-18', { elicitation: {} });
    raw.send({ jsonrpc: '2.0', id: 'run', method: 'tools/call',
               params: { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [marker] } } });
    const prompt = await raw.next();
    assert.equal(prompt.method, 'elicitation/create', JSON.stringify(prompt));
    raw.send({ jsonrpc: '2.0', id: prompt.id, ...answer });
    const result = await raw.next();
    assert.equal(result.id, 'run', JSON.stringify(result));
    const pong = await raw.request({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
    assert.deepEqual(pong, { jsonrpc: '2.0', id: 'ping', result: {} }, 'the server is still serving');
    return result.result;
  } finally {
    raw.kill();
  }
}

describe('answers to the confirmation prompt', () => {
  const shapes = {
    'action is a number': { result: { action: 7, content: { approve: true } } },
    'action is an object': { result: { action: { accept: true } } },
    'approve is the string "yes"': { result: { action: 'accept', content: { approve: 'yes' } } },
    'approve is 1': { result: { action: 'accept', content: { approve: 1 } } },
    'content is a string': { result: { action: 'accept', content: 'approve' } },
    'content is missing': { result: { action: 'accept' } },
    'result is an array': { result: ['accept'] },
    'both error and an accepting result': {
      error: { code: -1, message: 'no' }, result: { action: 'accept', content: { approve: true } } },
  };
  let n = 0;
  for (const [what, answer] of Object.entries(shapes)) {
    test(`${what}: nothing runs, the call gets a gate answer, the server lives`, async () => {
      const marker = join(tree.markers, `elicit-${(n += 1)}`);
      const r = await answerPrompt(answer, marker);
      const payload = JSON.parse(r.content[0].text);
      assert.equal(payload.confirmed, false, r.content[0].text);
      assert.equal(payload.action, 'skill.run', r.content[0].text);
      assert.equal(existsSync(marker), false, 'the script did not run');
    });
  }

  test('control: accept with approve true runs the script', async () => {
    const marker = join(tree.markers, 'elicit-control');
    const r = await answerPrompt({ result: { action: 'accept', content: { approve: true } } }, marker);
    assert.equal(r.isError ?? false, false, r.content[0].text);
    assert.equal(existsSync(marker), true, r.content[0].text);
  });
});
