// skill_load and skill_file: exact shapes, the batch rules and caps, and the
// containment discipline (a FIFO and a link to /etc/passwd inside a bundle are never
// served).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildDiscoveryTree, removeDir } from './fixtures.mjs';
import { assertKeyOrder, bodyOf, callJson, connect } from './lib.mjs';

const MiB = 1024 * 1024;
const ENTRY_KEYS = ['path', 'size', 'mediaType', 'encoding', 'truncated', 'truncationNote?', 'content'];

let tree;
let conn;
before(async () => {
  tree = buildDiscoveryTree();
  conn = await connect({ env: { SKILLS_DIR: [tree.rootA, tree.rootB].join(':') } });
});
after(async () => {
  await conn?.close();
  removeDir(tree.base);
});

const file = (name, paths) => callJson(conn.client, 'skill_file', { name, paths });

describe('skill_load', () => {
  test('shape, key order, body verbatim, manifest', async () => {
    const { isError, json, text } = await callJson(conn.client, 'skill_load', { name: 'good' });
    assert.equal(isError, false, text);
    assertKeyOrder(
      json,
      ['name', 'description?', 'whenToUse?', 'source', 'body', 'truncated', 'truncationNote?', 'files', 'scripts'],
      'skill_load',
    );
    assert.equal(json.name, 'good');
    assert.equal(json.description, 'A well-formed skill used by the read-tool tests.');
    assert.equal(json.whenToUse, 'When a test needs a skill that has everything.');
    assert.equal(json.body, bodyOf(tree.goodMd));
    // skillMd() writes "---\n" then a body that itself opens with a blank line.
    assert.ok(json.body.startsWith('\n# Good'), 'body starts after the closing --- line and its line break');
    assert.equal(json.truncated, false);
    assert.equal(json.truncationNote, undefined);
    for (const f of json.files) assert.deepEqual(Object.keys(f), ['path', 'size']);
    const paths = json.files.map((f) => f.path);
    for (const p of [
      'SKILL.md',
      'references/guide.md',
      'references/data.json',
      'scripts/hello.js',
      'scripts/tool.py',
      'assets/blob.bin',
      'assets/image.png',
      'assets/latin1.txt',
      'assets/big.txt',
    ]) {
      assert.ok(paths.includes(p), `manifest lists ${p}: ${paths}`);
    }
    assert.ok(!paths.includes('docs/pipe.fifo'), 'a FIFO is not a bundled file');
    assert.ok(!paths.includes('docs/passwd-link'), 'an escaping link is not a bundled file');
    const size = (p) => json.files.find((f) => f.path === p).size;
    assert.equal(size('assets/big.txt'), tree.bigSize);
    assert.equal(size('SKILL.md'), Buffer.byteLength(tree.goodMd));
    const at = (p) => paths.indexOf(p);
    assert.ok(at('references/guide.md') < at('scripts/hello.js'), 'case-insensitive order');
    assert.ok(at('scripts/hello.js') < at('SKILL.md'), 'case-insensitive order: scripts/... < SKILL.md');
    assert.ok(at('assets/big.txt') < at('references/data.json'));
    assert.deepEqual(json.scripts, [
      { script: 'scripts/hello.js', interpreter: 'node', runnableHere: true },
      { script: 'scripts/tool.py', interpreter: 'python', runnableHere: false },
    ]);
  });

  test('a SKILL.md over 262144 bytes is cut and says so', async () => {
    const { isError, json } = await callJson(conn.client, 'skill_load', { name: 'huge-md' });
    assert.equal(isError, false);
    assert.equal(json.truncated, true);
    assert.equal(typeof json.truncationNote, 'string');
    assert.ok(Buffer.byteLength(json.body) < 262144, `body ${Buffer.byteLength(json.body)} bytes`);
    assert.ok(json.body.length > 200000, 'the body is cut, not dropped');
    assert.ok(tree.hugeBody.startsWith(json.body), 'the body is a prefix of the real one');
  });

  test('an unknown skill is an isError result naming it', async () => {
    const { isError, text } = await callJson(conn.client, 'skill_load', { name: 'no-such-skill' });
    assert.equal(isError, true);
    assert.ok(text.includes('no-such-skill'), text);
  });

  test('a skill refused at discovery cannot be loaded', async () => {
    for (const name of ['dup', 'malformed', 'escape-link', 'secret-skill', 'alias']) {
      const { isError } = await callJson(conn.client, 'skill_load', { name });
      assert.equal(isError, true, name);
    }
  });
});

describe('skill_file', () => {
  test('request order kept; text, base64 with media types; entry shape', async () => {
    const paths = ['references/guide.md', 'assets/blob.bin', 'references/data.json', 'assets/image.png', 'assets/latin1.txt'];
    const { isError, json, text } = await file('good', paths);
    assert.equal(isError, false, text);
    assert.deepEqual(Object.keys(json), ['skill', 'files']);
    assert.equal(json.skill, 'good');
    assert.deepEqual(json.files.map((f) => f.path), paths);
    for (const entry of json.files) assertKeyOrder(entry, ENTRY_KEYS, `entry ${entry.path}`);

    const [guide, blob, data, png, latin1] = json.files;
    const guideBytes = readFileSync(join(tree.good, 'references/guide.md'));
    assert.equal(guide.encoding, 'utf-8');
    assert.equal(guide.mediaType, 'text/markdown');
    assert.equal(guide.content, guideBytes.toString('utf8'));
    assert.equal(guide.size, guideBytes.length);
    assert.equal(guide.truncated, false);

    assert.equal(blob.encoding, 'base64');
    assert.equal(blob.mediaType, 'application/octet-stream');
    assert.deepEqual(Buffer.from(blob.content, 'base64'), readFileSync(join(tree.good, 'assets/blob.bin')));

    assert.equal(data.mediaType, 'application/json');
    assert.equal(data.encoding, 'utf-8');
    assert.equal(data.content, '{"a":1}\n');

    assert.equal(png.mediaType, 'image/png');
    assert.equal(png.encoding, 'base64');

    assert.equal(latin1.mediaType, 'text/plain');
    assert.equal(latin1.encoding, 'base64', 'invalid UTF-8 is base64, never mangled');
    assert.deepEqual(Buffer.from(latin1.content, 'base64'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  });

  test('over 1 MiB: truncated with the real size', async () => {
    const { isError, json } = await file('good', ['assets/big.txt']);
    assert.equal(isError, false);
    const [big] = json.files;
    assert.equal(big.truncated, true);
    assert.equal(big.size, tree.bigSize);
    assert.equal(typeof big.truncationNote, 'string');
    assert.equal(big.encoding, 'utf-8');
    assert.equal(big.content.length, MiB);
  });

  test('8 paths are accepted, 9 are an isError naming the argument', async () => {
    const eight = Array(8).fill('references/data.json');
    const ok = await file('good', eight);
    assert.equal(ok.isError, false, ok.text);
    assert.equal(ok.json.files.length, 8);
    const nine = await file('good', Array(9).fill('references/data.json'));
    assert.equal(nine.isError, true);
    assert.ok(nine.text.includes('paths'), nine.text);
  });

  test('an empty paths array is an isError naming the argument', async () => {
    const r = await file('good', []);
    assert.equal(r.isError, true);
    assert.ok(r.text.includes('paths'), r.text);
  });

  test('4 MiB call budget, decided before any read, independent of order', async () => {
    const four = ['part1.txt', 'part2.txt', 'part3.txt', 'part4.txt'];
    const ok = await file('heavy', four);
    assert.equal(ok.isError, false, ok.text.slice(0, 300));
    assert.equal(ok.json.files.length, 4);
    for (const f of ok.json.files) {
      assert.equal(f.size, MiB);
      assert.equal(f.truncated, false);
    }
    const five = [...four, 'part5.txt'];
    for (const paths of [five, [...five].reverse(), ['small.txt', ...four], [...four, 'small.txt']]) {
      const over = await file('heavy', paths);
      assert.equal(over.isError, true, `over budget: ${paths}`);
      assert.ok(!over.text.includes('11111111'), 'no content is returned with the refusal');
    }
  });

  test('the budget counts min(size, 1 MiB): a truncated entry costs 1 MiB', async () => {
    const r = await file('good', ['assets/big.txt', 'references/guide.md']);
    assert.equal(r.isError, false);
    const over = await callJson(conn.client, 'skill_file', {
      name: 'heavy',
      paths: ['part1.txt', 'part2.txt', 'part3.txt', 'small.txt'],
    });
    assert.equal(over.isError, false, 'three MiB and six bytes fit');
  });

  test('a bad path fails only its own entry', async () => {
    const paths = [
      'references/guide.md',
      '../../rootB/heavy/small.txt',
      'nope.txt',
      '/etc/passwd',
      'docs/passwd-link',
      'docs/pipe.fifo',
      'references%2Fguide.md',
      'references/data.json',
    ];
    const { isError, json, text } = await file('good', paths);
    assert.equal(isError, false, text);
    assert.deepEqual(json.files.map((f) => f.path), paths);
    assert.equal(json.files[0].content, readFileSync(join(tree.good, 'references/guide.md'), 'utf8'));
    assert.equal(json.files[7].content, '{"a":1}\n');
    for (const entry of json.files.slice(1, 7)) {
      assert.deepEqual(Object.keys(entry), ['path', 'error'], JSON.stringify(entry));
      assert.equal(typeof entry.error, 'string');
    }
    assert.ok(!text.includes('root:x:0:0'), '/etc/passwd content never served');
  });

  test('more refused shapes: dot segments, backslash, NUL, trailing slash, doubled slash, directory', async () => {
    const paths = ['references/./guide.md', 'references\\guide.md', 'a\u0000b', 'scripts/', 'references//guide.md', 'references', ' ', 'docs/inner-link.md'];
    const { isError, json, text } = await file('good', paths);
    assert.equal(isError, false, text);
    for (const entry of json.files.slice(0, 7)) {
      assert.ok(entry.error, `refused: ${JSON.stringify(entry.path)} -> ${JSON.stringify(entry)}`);
    }
  });

  test('an unknown skill is an isError', async () => {
    const r = await file('no-such-skill', ['SKILL.md']);
    assert.equal(r.isError, true);
    assert.ok(r.text.includes('no-such-skill'));
  });

  test('skill_file reads nothing from another skill through a file link pointing outside the root', async () => {
    const r = await file('good', ['docs/passwd-link']);
    assert.equal(r.isError, false);
    assert.ok(r.json.files[0].error);
    assert.equal(r.json.files[0].content, undefined);
  });
});
