// The bundled example skill, end to end, the way a model would use it: list, load,
// fetch the reference its instructions point at, preview, confirm, read the report.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { bodyOf, callJson, connect, REPO } from './lib.mjs';

const SKILLS = join(REPO, 'skills');
const EXAMPLE = join(SKILLS, 'example');
const GREETING = 'Hello from the integration test';

let conn;
before(async () => {
  conn = await connect({ env: { SKILLS_DIR: SKILLS, EXAMPLE_GREETING: GREETING, UNRELATED_SECRET: 'nope' } });
});
after(async () => conn?.close());

test('skill_list shows the example with its one runnable script', async () => {
  const { json } = await callJson(conn.client, 'skill_list');
  assert.deepEqual(json.problems, [], JSON.stringify(json.problems));
  const example = json.skills.find((s) => s.name === 'example');
  assert.ok(example, JSON.stringify(json.skills.map((s) => s.name)));
  assert.equal(typeof example.description, 'string');
  assert.equal(typeof example.whenToUse, 'string');
  assert.equal(example.executable, true);
  assert.deepEqual(example.scripts, [
    { script: 'scripts/inspect.js', interpreter: 'node', timeoutMs: 20000, env: ['EXAMPLE_GREETING'] },
  ]);
  assert.deepEqual(example.unavailableScripts, []);
});

test('skill_load returns the instructions, which point at a reference in the manifest', async () => {
  const { json } = await callJson(conn.client, 'skill_load', { name: 'example' });
  assert.equal(json.body, bodyOf(readFileSync(join(EXAMPLE, 'SKILL.md'), 'utf8')));
  const referenced = [...json.body.matchAll(/`(references\/[^`]+)`/g)].map((m) => m[1]);
  assert.ok(referenced.length > 0, 'the instructions name a reference file');
  const manifest = json.files.map((f) => f.path);
  for (const ref of referenced) assert.ok(manifest.includes(ref), `${ref} is bundled`);
  const { json: files } = await callJson(conn.client, 'skill_file', { name: 'example', paths: referenced });
  for (const entry of files.files) {
    assert.equal(entry.encoding, 'utf-8');
    assert.equal(entry.content, readFileSync(join(EXAMPLE, entry.path), 'utf8'));
  }
});

test('skill_run: preview, confirm, and the report the user sees', async () => {
  const args = ['first', 'two words', '$HOME;|&'];
  const first = await callJson(conn.client, 'skill_run', { name: 'example', script: 'scripts/inspect.js', args });
  assert.equal(first.json.status, 'confirmation-required', first.text);
  const willRun = first.json.preview.willRun;
  assert.deepEqual(willRun.argv, ['scripts/inspect.js', ...args]);
  assert.ok(willRun.envNames.includes('EXAMPLE_GREETING'));
  assert.ok(!first.text.includes(GREETING), 'the preview shows names, not values');

  const second = await callJson(conn.client, 'skill_run', {
    name: 'example',
    script: 'scripts/inspect.js',
    args,
    confirmToken: first.json.confirmToken,
  });
  assert.equal(second.isError, false, second.text);
  assert.equal(second.json.exitCode, 0, second.json.stderr);
  const report = JSON.parse(second.json.stdout);
  assert.equal(report.skill, 'example');
  assert.deepEqual(report.argv, args);
  assert.equal(report.cwd, EXAMPLE);
  assert.deepEqual(report.envNames, second.json.env);
  assert.ok(!report.envNames.includes('UNRELATED_SECRET'));
  assert.equal(report.greeting, GREETING);
});
