// Wire parity of the read side with the TypeScript skill-mcp (docs/wire.md §2 and
// §10): skill_file's empty path and per-path messages, the 1 MiB cut before the
// text test, resources/read of a large file, resource errors carrying {uri}, the names
// and titles of prompts and resources, the input schemas' dialect; and the command line
// (--help after any command, the man page always built).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, REPO, callJson, connect, McpError, serverEnv, spawnRaw } from './lib.mjs';

const MiB = 1024 * 1024;
const CHECK = '\u2713'; // three bytes in UTF-8

let root;
let skill;
let conn;
before(async () => {
  root = freshDir('skill-mcp-parity-read-');
  skill = join(root, 'pr');
  mkdirSync(skill);
  writeFileSync(
    join(skill, 'SKILL.md'),
    skillMd('name: pr\ndescription: Reads things.\nwhen-to-use: When reading is asked for.', 'Body.\n'),
  );
  writeFileSync(join(skill, 'notes.txt'), 'hello');
  writeFileSync(join(skill, 'big.md'), 'b'.repeat(MiB + 10));
  // 1 MiB ends after the first byte of the check mark.
  writeFileSync(join(skill, 'cut.txt'), 'a'.repeat(MiB - 1) + CHECK + ' tail');
  // 1 MiB ends right after the check mark.
  writeFileSync(join(skill, 'even.txt'), 'a'.repeat(MiB - 3) + CHECK + ' tail');
  symlinkSync('/etc/passwd', join(skill, 'passwd-link'));
  conn = await connect({ env: { SKILLS_DIR: root } });
});
after(async () => {
  await conn?.close();
  if (root) removeDir(root);
});

const file = (paths) => callJson(conn.client, 'skill_file', { name: 'pr', paths });

describe('skill_file', () => {
  test('a path that is the empty string fails the whole call', async () => {
    for (const paths of [[''], ['notes.txt', ''], ['', 'notes.txt']]) {
      const { isError, json, text } = await file(paths);
      assert.equal(isError, true, `${JSON.stringify(paths)}: ${text}`);
      assert.equal(json.argument, 'paths', text);
      assert.equal(json.files, undefined, text);
    }
  });

  test('each per-path error names its path', async () => {
    const paths = ['missing.txt', '../outside', 'passwd-link', 'a//b', 'x%41'];
    const { isError, json, text } = await file(paths);
    assert.equal(isError, false, text);
    assert.deepEqual(json.files.map((f) => f.path), paths);
    for (const f of json.files) {
      assert.equal(typeof f.error, 'string', JSON.stringify(f));
      assert.ok(f.error.includes(`"${f.path}"`), `the message names ${f.path}: ${f.error}`);
    }
  });

  test('a cut through a multi-byte character is base64, truncated, with the real size', async () => {
    const { json, text } = await file(['cut.txt', 'even.txt']);
    const [cut, even] = json.files;
    const cutBytes = readFileSync(join(skill, 'cut.txt'));
    assert.equal(cut.encoding, 'base64', text.slice(0, 300));
    assert.equal(cut.truncated, true);
    assert.equal(cut.size, cutBytes.length);
    assert.equal(cut.mediaType, 'text/plain');
    assert.deepEqual(Buffer.from(cut.content, 'base64'), cutBytes.subarray(0, MiB));
    // A cut on a character boundary stays text.
    assert.equal(even.encoding, 'utf-8');
    assert.equal(even.truncated, true);
    assert.equal(Buffer.byteLength(even.content), MiB);
    assert.ok(even.content.endsWith(CHECK));
  });
});

describe('resources', () => {
  test('resources/read of a file over 1 MiB returns its first 1 MiB', async () => {
    const big = await conn.client.readResource({ uri: 'skill://pr/big.md' });
    assert.equal(big.contents.length, 1);
    assert.equal(big.contents[0].mimeType, 'text/markdown');
    assert.equal(big.contents[0].text, 'b'.repeat(MiB));
    // Text or blob by the same test as skill_file: this cut splits a character.
    const cut = await conn.client.readResource({ uri: 'skill://pr/cut.txt' });
    assert.equal(cut.contents[0].text, undefined);
    assert.deepEqual(
      Buffer.from(cut.contents[0].blob, 'base64'),
      readFileSync(join(skill, 'cut.txt')).subarray(0, MiB),
    );
  });

  test('every refused or missing resource is an error with data {uri}', async () => {
    for (const uri of [
      'skill://pr/missing.txt',
      'skill://pr/passwd-link',
      'skill://pr/../pr/notes.txt',
      'skill://pr/%2e%2e/x',
      'skill://pr/',
      'skill://pr',
      'skill://nobody/SKILL.md',
      'file:///etc/passwd',
    ]) {
      await assert.rejects(conn.client.readResource({ uri }), (err) => {
        assert.ok(err instanceof McpError, `${uri}: ${err}`);
        assert.deepEqual(err.data, { uri }, `${uri}: data`);
        return true;
      });
    }
  });

  test('resources/list: name is the URI, title is "<skill>: <path>"', async () => {
    const { resources } = await conn.client.listResources();
    const notes = resources.find((r) => r.uri === 'skill://pr/notes.txt');
    assert.ok(notes, JSON.stringify(resources));
    assert.equal(notes.name, 'skill://pr/notes.txt');
    assert.equal(notes.title, 'pr: notes.txt');
    for (const r of resources) {
      assert.equal(r.name, r.uri);
      assert.equal(r.title, `pr: ${r.uri.slice('skill://pr/'.length)}`);
    }
  });
});

describe('prompts', () => {
  test('prompts/list: title is the skill name, description joins with one space', async () => {
    const { prompts } = await conn.client.listPrompts();
    assert.equal(prompts.length, 1);
    assert.equal(prompts[0].name, 'pr');
    assert.equal(prompts[0].title, 'pr');
    assert.equal(prompts[0].description, 'Reads things. When reading is asked for.');
  });
});

describe('tools/list on the wire', () => {
  test('each inputSchema names JSON Schema 2020-12, keys type, $schema, properties, required', async () => {
    // Read raw: the SDK's schema parse rebuilds objects in its own key order.
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      await raw.initialize('2025-06-18');
      const answer = await raw.request({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const tools = answer.result.tools;
      assert.ok(tools.length >= 3);
      for (const t of tools) {
        const keys = Object.keys(t.inputSchema);
        const want = t.name === 'skill_list' ? ['type', '$schema', 'properties'] : ['type', '$schema', 'properties', 'required'];
        assert.deepEqual(keys, want, t.name);
        assert.equal(t.inputSchema.$schema, 'https://json-schema.org/draft/2020-12/schema');
        const read = t.name !== 'skill_run';
        assert.deepEqual(
          Object.keys(t.annotations),
          read
            ? ['title', 'readOnlyHint', 'idempotentHint', 'openWorldHint']
            : ['title', 'readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'],
          `${t.name} annotations`,
        );
        assert.equal(t.annotations.readOnlyHint, read);
        assert.equal(t.annotations.idempotentHint, read);
        assert.equal(t.annotations.openWorldHint, !read);
      }
    } finally {
      await raw.end();
    }
  });
});

describe('command line', () => {
  const run = (args) => spawnSync(BIN, args, { env: serverEnv({ SKILLS_DIR: root }), input: '', encoding: 'utf8', timeout: 20000 });

  test('--help (and -h) works after every command', () => {
    for (const args of [
      ['--help'],
      ['serve', '--help'],
      ['doctor', '--help'],
      ['connect', '--help'],
      ['connect', '-h'],
      ['connect', '/run/nowhere.sock', '--help'],
    ]) {
      const r = run(args);
      assert.equal(r.status, 0, `${args.join(' ')}: exit ${r.status}, stderr ${r.stderr}`);
      assert.match(r.stdout, /^Usage:/m, `${args.join(' ')} prints the usage`);
      assert.doesNotMatch(r.stderr, /cannot connect/, args.join(' '));
    }
  });

  test('connect refuses an unknown option instead of taking it for a socket', () => {
    const r = run(['connect', '--nope']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--nope/);
    assert.doesNotMatch(r.stderr, /cannot connect/);
  });

  test('every variable --help names is in docs/configuration.md and the man page', () => {
    const help = run(['--help']).stdout;
    const names = new Set(help.match(/\b(?:SKILLS_DIR|TMPDIR|MCP_[A-Z_]+|SKILL_MCP_[A-Z_]+)\b/g));
    // SKILL_MCP_LIMIT_* is named by its suffixes on the next line.
    for (const suffix of ['NPROC', 'AS_MB', 'DATA_MB', 'CPU_SECONDS', 'FSIZE_MB', 'NOFILE']) {
      assert.match(help, new RegExp(`\\b${suffix}\\b`), `--help names SKILL_MCP_LIMIT_${suffix}`);
      names.add(`SKILL_MCP_LIMIT_${suffix}`);
    }
    names.delete('SKILL_MCP_LIMIT_');
    assert.ok(names.size > 20, `--help names the settings: ${[...names]}`);
    const docs = readFileSync(join(REPO, 'docs', 'configuration.md'), 'utf8');
    const man = readFileSync(join(REPO, 'packaging', 'man', 'skill-mcp.1.scd'), 'utf8');
    for (const name of names) {
      assert.ok(docs.includes(`\`${name}\``), `docs/configuration.md documents ${name}`);
      assert.ok(man.includes(`*${name}*`), `the man page documents ${name}`);
    }
  });

  test('the man page is a required build product', (t) => {
    const man = process.env.SKILL_MCP_MAN;
    if (!man) {
      t.skip('SKILL_MCP_MAN is not set (meson test sets it)');
      return;
    }
    assert.ok(existsSync(man), `${man} was built`);
    const page = readFileSync(man, 'utf8');
    assert.match(page, /^\.TH "?skill-mcp"? "?1"?/im, 'a roff man page');
    for (const command of ['serve', 'doctor', 'connect']) assert.ok(page.includes(command), command);
    // scdoc is a build dependency wherever the project is built.
    assert.match(readFileSync(join(REPO, '.ci', 'setup'), 'utf8'), /\bscdoc\b/);
    const control = readFileSync(join(REPO, 'packaging', 'debian', 'control'), 'utf8');
    assert.match(control.split(/^Build-Depends:/m)[1].split(/^\S/m)[0], /\bscdoc\b/);
  });
});
