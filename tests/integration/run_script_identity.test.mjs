// The confirmation binds the script file, not only the call: a script edited or replaced
// between the preview and the confirmed call is DRAFT_CHANGED and nothing runs; the fresh
// token then runs the file as it is now (docs/wire.md §6, docs/isolation.md).
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildRunTree, removeDir } from './fixtures.mjs';
import { callJson, connect } from './lib.mjs';

let tree;
let conn;
let seq = 0;
before(async () => {
  tree = buildRunTree();
  // Markers live under the host's /tmp, which the run's own namespaces would hide.
  conn = await connect({ env: { SKILLS_DIR: tree.root, SKILL_MCP_NAMESPACES: 'off' } });
});
after(async () => {
  await conn?.close();
  removeDir(tree.base);
});

function marker() {
  seq += 1;
  return join(tree.markers, `id${seq}`);
}
function runs(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}
function run(args, confirmToken) {
  const a = { name: 'marker', script: 'scripts/mark.js', args };
  if (confirmToken !== undefined) a.confirmToken = confirmToken;
  return callJson(conn.client, 'skill_run', a);
}
async function previewToken(args) {
  const r = await run(args);
  assert.equal(r.json?.status, 'confirmation-required', r.text);
  return r.json.confirmToken;
}

describe('the token binds the script file', () => {
  test('a script edited after the preview is DRAFT_CHANGED; the fresh token runs it', async () => {
    const m = marker();
    const script = join(tree.marker, 'scripts', 'mark.js');
    const token = await previewToken([m, '0']);
    appendFileSync(script, '\n// edited after the preview\n');
    const r = await run([m, '0'], token);
    assert.equal(r.isError, true, r.text);
    assert.equal(r.json?.error, 'DRAFT_CHANGED', r.text);
    assert.equal(r.json.reason, 'payload-changed');
    assert.equal(runs(m), 0, 'nothing ran');
    const again = await run([m, '0'], r.json.confirmToken);
    assert.equal(again.isError, false, again.text);
    assert.equal(again.json.exitCode, 0, again.text);
    assert.equal(runs(m), 1, 'the fresh token runs the file as it is now');
  });

  test('a script replaced by an identical copy (another inode) is DRAFT_CHANGED', async () => {
    const m = marker();
    const script = join(tree.marker, 'scripts', 'mark.js');
    const token = await previewToken([m, '0']);
    const copy = `${script}.new`;
    writeFileSync(copy, readFileSync(script));
    renameSync(copy, script);
    const r = await run([m, '0'], token);
    assert.equal(r.json?.error, 'DRAFT_CHANGED', r.text);
    assert.equal(runs(m), 0, 'nothing ran');
  });

  test('an unchanged script runs with its token', async () => {
    const m = marker();
    const token = await previewToken([m, '0']);
    const r = await run([m, '0'], token);
    assert.equal(r.isError, false, r.text);
    assert.equal(runs(m), 1);
  });
});
