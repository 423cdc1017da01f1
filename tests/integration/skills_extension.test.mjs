// Skills over MCP (`io.modelcontextprotocol/skills`): skills/list, skills/get and
// resources/directory/read through the official SDK client's raw request API, checked the
// way a skills-aware host checks them: every listed file read back with resources/read
// and verified against its sha256 digest and size (docs/wire.md §9).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { assertKeyOrder, BIN, callJson, connect, McpError, problemsOf, REPO, serverEnv } from './lib.mjs';
import { skipOrRequire } from './required_tools.mjs';

const EXT = 'io.modelcontextprotocol/skills';
const sha = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

const rpc = (client, method, params = {}) => client.request({ method, params }, ResultSchema);

async function rpcError(client, method, params) {
  try {
    await rpc(client, method, params);
  } catch (err) {
    assert.ok(err instanceof McpError, String(err));
    return err;
  }
  assert.fail(`${method} ${JSON.stringify(params)} answered instead of failing`);
}

/** Every file under dir, as '/'-separated paths relative to it. */
function walk(dir, base = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), base) : [relative(base, join(dir, e.name))],
  );
}

/** The bytes resources/read returns for a uri (text as UTF-8, blob decoded). */
async function readBytes(client, uri) {
  const { contents } = await client.readResource({ uri });
  assert.equal(contents.length, 1);
  const [c] = contents;
  return c.blob !== undefined ? Buffer.from(c.blob, 'base64') : Buffer.from(c.text, 'utf8');
}

/** A host's verification of one entry: complete, and every read matches digest and size. */
async function verifyEntry(client, entry, dir) {
  const name = entry.frontmatter.name;
  assert.equal(entry.uri, `skill://${name}/SKILL.md`);
  const listed = entry.resources.map((r) => r.uri).sort();
  assert.deepEqual(listed, walk(dir).map((p) => `skill://${name}/${p}`).sort(), 'every file once');
  for (const r of entry.resources) {
    assert.match(r.digest, /^sha256:[0-9a-f]{64}$/);
    const disk = readFileSync(join(dir, r.uri.slice(`skill://${name}/`.length)));
    assert.equal(r.digest, sha(disk), r.uri);
    assert.equal(r.size, disk.length, r.uri);
    const served = await readBytes(client, r.uri);
    assert.equal(served.length, r.size, `${r.uri}: size as resources/read serves it`);
    assert.equal(sha(served), r.digest, `${r.uri}: digest as resources/read serves it`);
  }
}

/** Nested folders, binary files, a renamed skill and one breaking the name rule. */
function buildFixture(root) {
  const files = {
    'nested-kit/SKILL.md': skillMd(
      'name: nested-kit\ndescription: Nested folders and binary files.\nlicense: MIT\nmetadata:\n  version: "2.1"',
      '\nPick a template from `templates/`.\n',
    ),
    'nested-kit/templates/invoice.md': '# Invoice\n',
    'nested-kit/templates/regional/eu/invoice.md': '# EU invoice\n',
    'nested-kit/assets/logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
    'nested-kit/assets/random.bin': Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
    'renamed/SKILL.md': skillMd('name: something-else\ndescription: Frontmatter disagrees.', '\nbody\n'),
    'renamed/notes.txt': 'still served by the tools\n',
    'Bad_Name/SKILL.md': skillMd('name: Bad_Name\ndescription: Breaks the name rule.', '\nbody\n'),
  };
  for (const [rel, content] of Object.entries(files)) {
    const path = join(root, rel);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
  }
}

describe('the bundled example skill', () => {
  const skills = join(REPO, 'skills');
  let conn;
  before(async () => {
    conn = await connect({ env: { SKILLS_DIR: skills } });
  });
  after(async () => conn?.close());

  test('initialize declares the extension with directoryRead, beside resources', () => {
    const caps = conn.client.getServerCapabilities();
    assert.deepEqual(caps.extensions, { [EXT]: { directoryRead: true } });
    assert.equal(typeof caps.resources, 'object');
  });

  test('skills/list: one verified entry, the frontmatter verbatim', async () => {
    const result = await rpc(conn.client, 'skills/list');
    assert.equal(result.resultType, 'complete');
    assert.equal(result.nextCursor, undefined);
    assert.equal(result.skills.length, 1);
    const [entry] = result.skills;
    assert.deepEqual(Object.keys(entry), ['uri', 'frontmatter', 'resources']);
    assert.equal(entry.frontmatter.name, 'example');
    assert.equal(typeof entry.frontmatter.description, 'string');
    assert.equal(typeof entry.frontmatter['when-to-use'], 'string');
    assert.deepEqual(entry.frontmatter['mcp-host'], {
      version: 1,
      run: [{ script: 'scripts/inspect.js', interpreter: 'node', env: ['EXAMPLE_GREETING'], timeout: 20 }],
    });
    await verifyEntry(conn.client, entry, join(skills, 'example'));
  });

  test('skills/get returns the listed entry; an unknown URI is -32602', async () => {
    const { skills: [listed] } = await rpc(conn.client, 'skills/list');
    const got = await rpc(conn.client, 'skills/get', { uri: 'skill://example/SKILL.md' });
    assert.equal(got.resultType, 'complete');
    assert.deepEqual(got.skill, listed);
    for (const uri of ['skill://nope/SKILL.md', 'skill://example', 'skill://example/references/report-fields.md']) {
      const err = await rpcError(conn.client, 'skills/get', { uri });
      assert.equal(err.code, -32602, uri);
    }
  });

  test('the 2025 tools answer as before: no problems', async () => {
    const { json } = await callJson(conn.client, 'skill_list');
    assert.deepEqual(json.problems, []);
  });
});

describe('a fixture with nested folders, binary files and a renamed skill', () => {
  let base;
  let root;
  let conn;
  before(async () => {
    base = freshDir('skill-mcp-ext-');
    root = join(base, 'root');
    buildFixture(root);
    conn = await connect({ env: { SKILLS_DIR: root } });
  });
  after(async () => {
    await conn?.close();
    removeDir(base);
  });

  test('skills/list: only the conforming skill, verified file by file', async () => {
    const { skills } = await rpc(conn.client, 'skills/list');
    assert.deepEqual(skills.map((s) => s.uri), ['skill://nested-kit/SKILL.md']);
    assert.deepEqual(skills[0].frontmatter, {
      name: 'nested-kit',
      description: 'Nested folders and binary files.',
      license: 'MIT',
      metadata: { version: '2.1' },
    });
    await verifyEntry(conn.client, skills[0], join(root, 'nested-kit'));
  });

  test('the left-out skills: in skillsExtension.omitted (not problems), still served by the tools', async () => {
    const { json: list } = await callJson(conn.client, 'skill_list');
    assert.deepEqual(list.skills.map((s) => s.name).sort(), ['Bad_Name', 'nested-kit', 'renamed']);
    assert.deepEqual(problemsOf(list, 'skills-ext-name'), [], JSON.stringify(list.problems));
    const omitted = list.skillsExtension.omitted;
    assert.deepEqual(omitted.map((o) => [o.name, o.reason]), [['Bad_Name', 'skills-ext-name'], ['renamed', 'skills-ext-name']]);
    for (const o of omitted) assertKeyOrder(o, ['name', 'reason', 'detail'], 'omitted entry');
    assert.equal(problemsOf(list, 'name-mismatch').length, 1);
    const { isError, json } = await callJson(conn.client, 'skill_file', { name: 'renamed', paths: ['notes.txt'] });
    assert.equal(isError, false);
    assert.equal(json.files[0].content, 'still served by the tools\n');
    assert.equal((await readBytes(conn.client, 'skill://renamed/notes.txt')).toString(), 'still served by the tools\n');
    for (const uri of ['skill://renamed/SKILL.md', 'skill://something-else/SKILL.md', 'skill://Bad_Name/SKILL.md']) {
      assert.equal((await rpcError(conn.client, 'skills/get', { uri })).code, -32602, uri);
    }
  });

  test('resources/directory/read: direct children, descending to the deepest folder', async () => {
    const names = async (uri) => {
      const r = await rpc(conn.client, 'resources/directory/read', { uri });
      assert.equal(r.resultType, 'complete');
      return r.resources.map((c) => [c.name, c.mimeType, c.uri]).sort();
    };
    assert.deepEqual(await names('skill://nested-kit'), [
      ['SKILL.md', 'text/markdown', 'skill://nested-kit/SKILL.md'],
      ['assets', 'inode/directory', 'skill://nested-kit/assets'],
      ['templates', 'inode/directory', 'skill://nested-kit/templates'],
    ]);
    assert.deepEqual(await names('skill://nested-kit/templates'), [
      ['invoice.md', 'text/markdown', 'skill://nested-kit/templates/invoice.md'],
      ['regional', 'inode/directory', 'skill://nested-kit/templates/regional'],
    ]);
    assert.deepEqual(await names('skill://nested-kit/templates/regional/eu'), [
      ['invoice.md', 'text/markdown', 'skill://nested-kit/templates/regional/eu/invoice.md'],
    ]);
    assert.deepEqual((await names('skill://nested-kit/assets')).map((c) => c[1]), [
      'image/png',
      'application/octet-stream',
    ]);
  });

  test('resources/directory/read: a file, a missing path or a trailing slash is -32602', async () => {
    for (const uri of [
      'skill://nested-kit/SKILL.md',
      'skill://nested-kit/templates/',
      'skill://nested-kit/nope',
      'skill://nope',
    ]) {
      const err = await rpcError(conn.client, 'resources/directory/read', { uri });
      assert.equal(err.code, -32602, uri);
    }
  });
});

describe('a file changed under a running server', () => {
  let base;
  let dir;
  let conn;
  const uri = 'skill://kit/notes.txt';
  const entryDigest = (entry) => entry.resources.find((r) => r.uri === uri);
  before(async () => {
    base = freshDir('skill-mcp-ext-change-');
    dir = join(base, 'kit');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'SKILL.md'), skillMd('name: kit\ndescription: Changes under us.', '\nbody\n'));
    writeFileSync(join(dir, 'notes.txt'), 'first version\n');
    conn = await connect({ env: { SKILLS_DIR: base } });
  });
  after(async () => {
    await conn?.close();
    removeDir(base);
  });

  test('the entry keeps the digest taken at first use; resources/read serves the new bytes, which fail it', async () => {
    const before = entryDigest((await rpc(conn.client, 'skills/list')).skills[0]);
    assert.equal(before.digest, sha('first version\n'));
    writeFileSync(join(dir, 'notes.txt'), 'second version, longer\n');
    // skills/list and skills/get: the held entry, unchanged for the process lifetime.
    const listed = entryDigest((await rpc(conn.client, 'skills/list')).skills[0]);
    assert.deepEqual(listed, before);
    const got = entryDigest((await rpc(conn.client, 'skills/get', { uri: 'skill://kit/SKILL.md' })).skill);
    assert.deepEqual(got, before);
    // resources/read and skill_file: the bytes on disk now, which a host's check refuses.
    const served = await readBytes(conn.client, uri);
    assert.equal(served.toString(), 'second version, longer\n');
    assert.notEqual(sha(served), before.digest);
    assert.notEqual(served.length, before.size);
    const { json } = await callJson(conn.client, 'skill_file', { name: 'kit', paths: ['notes.txt'] });
    assert.equal(json.files[0].content, 'second version, longer\n');
    assert.equal(json.files[0].size, statSync(join(dir, 'notes.txt')).size);
    // The directory view is the boot manifest's: the same children.
    const { resources } = await rpc(conn.client, 'resources/directory/read', { uri: 'skill://kit' });
    assert.deepEqual(resources.map((r) => r.name).sort(), ['SKILL.md', 'notes.txt']);
  });

  test('SKILL.md changed: the held entry and skill_load keep what they took, resources/read serves the new bytes', async () => {
    const md = (await rpc(conn.client, 'skills/get', { uri: 'skill://kit/SKILL.md' })).skill.resources.find(
      (r) => r.uri === 'skill://kit/SKILL.md',
    );
    const old = readFileSync(join(dir, 'SKILL.md'));
    assert.equal(md.digest, sha(old));
    writeFileSync(join(dir, 'SKILL.md'), skillMd('name: kit\ndescription: Changed.', '\nnew body\n'));
    const again = (await rpc(conn.client, 'skills/list')).skills[0];
    assert.deepEqual(again.frontmatter, { name: 'kit', description: 'Changes under us.' });
    assert.deepEqual(again.resources.find((r) => r.uri === 'skill://kit/SKILL.md'), md);
    const served = await readBytes(conn.client, 'skill://kit/SKILL.md');
    assert.notEqual(sha(served), md.digest);
    const { json } = await callJson(conn.client, 'skill_load', { name: 'kit' });
    assert.equal(json.body, '\nbody\n');
    writeFileSync(join(dir, 'SKILL.md'), old);
  });

  test('a change before the first skills/list or skills/get is in the entry', async () => {
    const fresh = await connect({ env: { SKILLS_DIR: base } });
    try {
      writeFileSync(join(dir, 'notes.txt'), 'third\n');
      const got = entryDigest((await rpc(fresh.client, 'skills/get', { uri: 'skill://kit/SKILL.md' })).skill);
      assert.deepEqual(got, { uri, digest: sha('third\n'), size: 6 });
    } finally {
      await fresh.close();
    }
  });
});

// The MCP Inspector v2 CLI's own SEP-2640 checks (`--verify`): conformance of each entry
// and every file's digest and size as resources/read serves it, in the 2025 handshake and
// in the 2026-07-28 revision (`--protocol-era modern`), where it also checks the
// revision's result shapes (resultType, ttlMs, cacheScope). The Inspector needs node
// >= 22.19, which the CI image may not have: point SKILL_MCP_INSPECTOR at its
// `mcp-inspector` script and SKILL_MCP_INSPECTOR_NODE at such a node (docs/wire.md
// §9), else these cases SKIP saying so, or fail under SKILL_MCP_REQUIRE_TOOLS=1
// (tests/integration/README.md).
describe('the MCP Inspector CLI: --verify and directory reads, in both eras', () => {
  const inspector = process.env.SKILL_MCP_INSPECTOR;
  const node = process.env.SKILL_MCP_INSPECTOR_NODE;
  let missing = false;
  if (!inspector || !node || !existsSync(inspector) || !existsSync(node)) {
    missing = 'SKILL_MCP_INSPECTOR and SKILL_MCP_INSPECTOR_NODE (node >= 22.19) are not set to existing files';
  } else {
    const [major, minor] = execFileSync(node, ['--version']).toString().slice(1).split('.').map(Number);
    if (major < 22 || (major === 22 && minor < 19)) missing = `${node} is older than node 22.19`;
  }
  const skip = skipOrRequire(missing, 'the MCP Inspector CLI');
  let base;
  let root;
  before(() => {
    base = freshDir('skill-mcp-ext-insp-');
    root = join(base, 'root');
    buildFixture(root);
  });
  after(() => removeDir(base));

  /**
   * Runs the Inspector CLI against the built server, which sees the client's requests
   * through `tee` into `requests` (to show which era was spoken); returns {status,
   * stdout, output, requests}.
   */
  let runs = 0;
  function inspect(skillsDir, ...args) {
    runs += 1;
    const log = join(base, `requests-${runs}.jsonl`);
    const server = ['/bin/sh', '-c', 'tee "$0" | exec "$1"', log, BIN];
    const r = spawnSync(node, [inspector, '--cli', '-e', `SKILLS_DIR=${skillsDir}`, ...args, ...server], {
      env: { ...serverEnv(), PATH: `${dirname(node)}:${process.env.PATH}`, HOME: base },
      encoding: 'utf8',
      timeout: 120000,
    });
    const requests = existsSync(log)
      ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
      : [];
    return { status: r.status, stdout: r.stdout, output: `${r.stdout}\n${r.stderr}`, requests };
  }

  /** The era the Inspector spoke: the 2025 handshake, or 2026-07-28 without initialize. */
  function assertEra(era, requests, output) {
    const methods = requests.map((m) => m.method);
    assert.ok(methods.length > 0, output);
    if (era === 'legacy') {
      assert.equal(methods[0], 'initialize', output);
      return;
    }
    assert.equal(methods.includes('initialize'), false, `no initialize in 2026-07-28: ${methods}`);
    for (const m of requests.filter((r) => r.id !== undefined)) {
      assert.equal(m.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28', JSON.stringify(m));
    }
  }

  const example = () => join(REPO, 'skills');
  const cases = [
    ['the example, skills/list', () => [example(), '--method', 'skills/list'], ['skill://example/SKILL.md']],
    ['the example, skills/get', () => [example(), '--method', 'skills/get', '--uri', 'skill://example/SKILL.md'], ['skill://example/SKILL.md']],
    ['the fixture, skills/list', () => [root, '--method', 'skills/list'], ['skill://nested-kit/SKILL.md']],
    ['the fixture, skills/get', () => [root, '--method', 'skills/get', '--uri', 'skill://nested-kit/SKILL.md'], ['skill://nested-kit/SKILL.md']],
  ];
  for (const era of ['legacy', 'modern']) {
    for (const [what, args, uris] of cases) {
      test(`${what} (--protocol-era ${era}): exit 0, every file verified`, { skip }, () => {
        const [dir, ...method] = args();
        const { status, stdout, output, requests } = inspect(dir, '--protocol-era', era, ...method, '--verify');
        assert.equal(status, 0, output);
        const reports = stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l));
        assert.deepEqual(reports.map((r) => r.uri), uris, output);
        for (const r of reports) {
          assert.equal(r.outcome, 'verified', output);
          assert.deepEqual(r.conformance, [], output);
          assert.ok(r.files.length > 0 && r.files.every((f) => f.status === 'verified'), output);
        }
        assertEra(era, requests, output);
      });
    }
  }

  const directories = [
    ['the example', example, 'skill://example', ['SKILL.md', 'references', 'scripts']],
    ['the fixture', () => root, 'skill://nested-kit/templates', ['invoice.md', 'regional']],
  ];
  for (const era of ['legacy', 'modern', 'auto']) {
    for (const [what, dir, uri, names] of directories) {
      test(`${what}, resources/directory/read ${uri} (--protocol-era ${era}): the Inspector accepts the result`, { skip }, () => {
        const method = ['--method', 'resources/directory/read', '--uri', uri, '--format', 'json'];
        const { status, stdout, output, requests } = inspect(dir(), '--protocol-era', era, ...method);
        assert.equal(status, 0, output);
        const { result } = JSON.parse(stdout);
        assert.ok(result, output);
        assert.deepEqual(result.resources.map((c) => c.name).sort(), names, output);
        if (era === 'legacy') {
          assert.equal('ttlMs' in result, false, output);
        } else {
          assert.equal(result.ttlMs, 0, output);
          assert.equal(result.cacheScope, 'private', output);
        }
        // auto: the Inspector probes server/discover and picks 2026-07-28.
        assertEra(era === 'legacy' ? 'legacy' : 'modern', requests, output);
      });
    }
  }
});
