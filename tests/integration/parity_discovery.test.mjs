// Discovery and declarations as a client of the TypeScript skill-mcp sees them (docs/wire.md
// §1): on a tree laid out like a public skills repository (skills under
// skills/<name>, a template/ whose frontmatter name differs, a spec/ without SKILL.md),
// then rule by rule: source, body, wrong-type fields, the declaration version, unknown
// frontmatter keys, '%' in names and the root list of SKILLS_DIR / MCP_SKILLS_PATH.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { callJson, connect, problemsOf } from './lib.mjs';

function write(path, content) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

/** The body a client must get: SKILL.md after the closing `---` line and its line break. */
function bodyAfterFence(text) {
  const lines = text.split('\n');
  let offset = lines[0].length + 1;
  for (let i = 1; i < lines.length; i += 1) {
    if (/^---[ \t\r]*$/.test(lines[i])) return text.slice(Math.min(offset + lines[i].length + 1, text.length));
    offset += lines[i].length + 1;
  }
  throw new Error('no closing fence');
}

async function withServer(env, fn) {
  const conn = await connect({ env });
  try {
    return await fn(conn);
  } finally {
    await conn.close();
  }
}

async function listOf(client) {
  const { isError, json, text } = await callJson(client, 'skill_list');
  assert.equal(isError, false, text);
  return json;
}

// The 17 skills under skills/ (names of the kind a public collection uses).
const COLLECTION = [
  'xlsx',
  'algorithmic-art',
  'brand-guidelines',
  'canvas-design',
  'claude-api',
  'doc-coauthoring',
  'docx',
  'frontend-design',
  'internal-comms',
  'mcp-builder',
  'pdf',
  'pptx',
  'skill-creator',
  'slack-gif-creator',
  'theme-factory',
  'web-artifacts-builder',
  'webapp-testing',
];

/** A copy of a public skills repository's layout, written here, nothing downloaded. */
function buildCollection(base) {
  const root = join(base, 'collection');
  write(join(root, 'README.md'), '# A collection of skills\n');
  write(join(root, 'THIRD_PARTY_NOTICES.md'), 'notices\n');
  write(join(root, '.claude-plugin', 'marketplace.json'), '{"plugins":[]}\n');
  write(join(root, 'spec', 'agent-skills-spec.md'), '# The format\n');
  const md = {};
  md.template = skillMd(
    'name: template-skill\ndescription: Copy this directory to start a new skill.',
    '\n# Template\n\nWrite the instructions here.\n',
  );
  write(join(root, 'template', 'SKILL.md'), md.template);
  COLLECTION.forEach((name, i) => {
    const extra = i % 3 === 0 ? '\nlicense: Complete terms in LICENSE.txt' : '';
    const tools = i % 4 === 1 ? '\nallowed-tools: [Read, Write]\nmetadata:\n  owner: docs' : '';
    // Some bodies start right after the fence, some after a blank line, one with CRLF fences.
    const body = i % 2 === 0 ? `# ${name}\n\nSteps for ${name}.\n` : `\n# ${name}\n\nSteps.\n`;
    md[name] =
      i === 5
        ? `---\r\nname: ${name}\r\ndescription: The ${name} skill.\r\n---\r\n${body}`
        : skillMd(`name: ${name}\ndescription: The ${name} skill.${extra}${tools}`, body);
    write(join(root, 'skills', name, 'SKILL.md'), md[name]);
    if (extra) write(join(root, 'skills', name, 'LICENSE.txt'), 'terms\n');
    if (i % 5 === 0) write(join(root, 'skills', name, 'scripts', 'helper.py'), 'print(1)\n');
    if (i % 6 === 0) write(join(root, 'skills', name, 'reference', 'notes.md'), '# notes\n');
  });
  return { root, md };
}

describe('a public skills repository layout (skills/<name>, template/, spec/)', () => {
  let base;
  let tree;
  let list;
  let conn;
  before(async () => {
    base = freshDir('skill-mcp-parity-');
    tree = buildCollection(base);
    conn = await connect({ env: { SKILLS_DIR: tree.root } });
    list = await listOf(conn.client);
  });
  after(async () => {
    await conn?.close();
    removeDir(base);
  });
  const show = () => JSON.stringify(list.problems, null, 1);

  test('order: template/ first, then the skills/ skills collated', () => {
    const sorted = [...COLLECTION].sort();
    assert.deepEqual(
      list.skills.map((s) => s.name),
      ['template', ...sorted],
    );
  });

  test('template/ is served under its directory name, with one name-mismatch', () => {
    const template = list.skills.find((s) => s.name === 'template');
    assert.equal(template.description, 'Copy this directory to start a new skill.');
    const mismatch = problemsOf(list, 'name-mismatch');
    assert.equal(mismatch.length, 1, show());
    assert.equal(mismatch[0].path, join(tree.root, 'template'));
    assert.ok(mismatch[0].detail.includes('template-skill'), mismatch[0].detail);
  });

  test('problems: exactly spec/ without SKILL.md, then the name-mismatch, at the directories', () => {
    const got = list.problems.map((p) => [p.reason, p.path]);
    assert.deepEqual(
      got,
      [
        ['no-skill-md', join(tree.root, 'spec')],
        ['name-mismatch', join(tree.root, 'template')],
      ],
      show(),
    );
    // The skills extension cannot list it (skills_extension.test.mjs); the tools serve it.
    // That note is ours, so it lives outside the reference's problems.
    assert.deepEqual(
      list.skillsExtension.omitted.map((o) => [o.name, o.reason]),
      [['template', 'skills-ext-name']],
    );
  });

  test('source is the configured root for every skill', () => {
    assert.deepEqual(list.roots, [tree.root]);
    for (const s of list.skills) assert.equal(s.source, tree.root, s.name);
  });

  test('skill_load: source is the root, body starts after the closing fence line', async () => {
    for (const name of ['template', ...COLLECTION]) {
      const { isError, json, text } = await callJson(conn.client, 'skill_load', { name });
      assert.equal(isError, false, text);
      assert.equal(json.source, tree.root, name);
      assert.equal(json.body, bodyAfterFence(tree.md[name]), name);
      assert.equal(json.truncated, false);
    }
    const docx = await callJson(conn.client, 'skill_load', { name: 'docx' });
    assert.equal(docx.json.body, '# docx\n\nSteps for docx.\n');
    const art = await callJson(conn.client, 'skill_load', { name: 'algorithmic-art' });
    assert.equal(art.json.body, '\n# algorithmic-art\n\nSteps.\n');
  });

  test('prompts/get: the same body', async () => {
    for (const name of ['template', 'docx', 'algorithmic-art', COLLECTION[5]]) {
      const prompt = await conn.client.getPrompt({ name });
      assert.equal(prompt.messages[0].content.text, bodyAfterFence(tree.md[name]), name);
    }
  });
});

describe('frontmatter fields, versions and unknown keys over the wire', () => {
  let base;
  let root;
  let list;
  let conn;
  before(async () => {
    base = freshDir('skill-mcp-parity-');
    root = join(base, 'root');
    write(join(root, 'float-desc', 'SKILL.md'), skillMd('name: float-desc\ndescription: 1.10\nwhen-to-use: yes', 'body\n'));
    write(join(root, 'underscore', 'SKILL.md'), skillMd('name: underscore\ndescription: d\nwhen_to_use: On Mondays.', 'b\n'));
    write(join(root, 'null-name', 'SKILL.md'), skillMd('name:\ndescription: d', 'b\n'));
    write(
      join(root, 'hooked', 'SKILL.md'),
      skillMd('name: hooked\ndescription: d\nhooks:\n  PostToolUse:\n    - command: echo edited', 'b\n'),
    );
    for (const [dir, version] of [
      ['v-string', '"1"'],
      ['v-float', '1.5'],
      ['v-negative', '-1'],
      ['v-null', 'null'],
      ['v-huge', '18446744073709551617'],
      ['v-one', '1'],
    ]) {
      write(
        join(root, dir, 'SKILL.md'),
        skillMd(
          `name: ${dir}\ndescription: Version ${version}.\nmcp-host:\n  version: ${version}\n  run:\n    - script: scripts/mark.js\n      interpreter: node`,
          `# ${dir}\n`,
        ),
      );
      write(
        join(root, dir, 'scripts', 'mark.js'),
        `require('node:fs').writeFileSync(${JSON.stringify(join(base, `ran-${dir}`))}, 'ran');\n`,
      );
    }
    conn = await connect({ env: { SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto' } });
    list = await listOf(conn.client);
  });
  after(async () => {
    await conn?.close();
    removeDir(base);
  });
  const skill = (name) => list.skills.find((s) => s.name === name);
  const show = () => JSON.stringify(list.problems, null, 1);

  test('description: 1.10 is no description; when-to-use: yes is the string "yes"', () => {
    const s = skill('float-desc');
    assert.ok(s, show());
    assert.equal(Object.hasOwn(s, 'description'), false);
    assert.equal(s.whenToUse, 'yes');
  });

  test('when_to_use is read as well as when-to-use', () => {
    assert.equal(skill('underscore').whenToUse, 'On Mondays.');
  });

  test('a null frontmatter name: served under the directory name, no name-mismatch', () => {
    assert.ok(skill('null-name'));
    assert.ok(!problemsOf(list, 'name-mismatch').some((p) => p.path === join(root, 'null-name')), show());
  });

  test('an unknown top-level key (hooks) is a declaration problem naming it', () => {
    assert.ok(skill('hooked'));
    const ps = problemsOf(list, 'declaration').filter((p) => p.path === join(root, 'hooked'));
    assert.equal(ps.length, 1, show());
    assert.ok(ps[0].detail.includes('hooks'), ps[0].detail);
  });

  for (const dir of ['v-string', 'v-float', 'v-negative', 'v-null', 'v-huge']) {
    test(`mcp-host.version ${dir}: a declaration problem, instructions served, nothing runs`, async () => {
      const s = skill(dir);
      assert.ok(s, show());
      assert.deepEqual(s.scripts, []);
      assert.equal(s.executable, false);
      assert.ok(problemsOf(list, 'declaration').some((p) => p.path === join(root, dir)), show());
      const load = await callJson(conn.client, 'skill_load', { name: dir });
      assert.equal(load.json.body, `# ${dir}\n`);
      const first = await callJson(conn.client, 'skill_run', { name: dir, script: 'scripts/mark.js' });
      assert.equal(first.isError, true, first.text);
      assert.equal(first.json?.confirmToken, undefined, 'no confirmation is offered');
      assert.equal(existsSync(join(base, `ran-${dir}`)), false, 'the script never ran');
    });
  }

  test('mcp-host.version 1 (the integer) declares the script', () => {
    const s = skill('v-one');
    assert.deepEqual(
      s.scripts.map((x) => x.script),
      ['scripts/mark.js'],
    );
    assert.ok(!problemsOf(list, 'declaration').some((p) => p.path === join(root, 'v-one')), show());
  });
});

describe("'%' in a file or directory name", () => {
  let base;
  let root;
  let list;
  let conn;
  before(async () => {
    base = freshDir('skill-mcp-parity-');
    root = join(base, 'root');
    const s = join(root, 'pct');
    write(join(s, 'SKILL.md'), skillMd('name: pct\ndescription: d', 'b\n'));
    write(join(s, 'ok.txt'), 'ok\n');
    write(join(s, '100%.txt'), 'a lone percent\n');
    write(join(s, 'c%zz.txt'), 'not an escape\n');
    write(join(s, '50%off', 'a.txt'), 'inside\n');
    write(join(s, '50%off', 'deep', 'b.txt'), 'deeper\n');
    conn = await connect({ env: { SKILLS_DIR: root } });
    list = await listOf(conn.client);
  });
  after(async () => {
    await conn?.close();
    removeDir(base);
  });

  test('left out of the manifest, one unusable-path per file or directory subtree', async () => {
    const load = await callJson(conn.client, 'skill_load', { name: 'pct' });
    assert.deepEqual(
      load.json.files.map((f) => f.path),
      ['ok.txt', 'SKILL.md'],
    );
    // One per entry, each at the skill directory, the detail naming the entry.
    const ps = problemsOf(list, 'unusable-path');
    assert.deepEqual(ps.map((p) => p.path), Array(3).fill(join(root, 'pct')));
    for (const name of ['100%.txt', '50%off', 'c%zz.txt']) {
      assert.equal(ps.filter((p) => p.detail.startsWith(`'${name}'`)).length, 1, name);
    }
    assert.equal(list.skills[0].files, 2);
  });

  test('no read tool serves it', async () => {
    const { json, text } = await callJson(conn.client, 'skill_file', {
      name: 'pct',
      paths: ['100%.txt', 'c%zz.txt', '50%off/a.txt', 'ok.txt'],
    });
    assert.ok(json, text);
    const [lone, zz, inside, ok] = json.files;
    for (const entry of [lone, zz, inside]) {
      assert.ok(entry.error, JSON.stringify(entry));
      assert.equal(entry.content, undefined);
    }
    assert.equal(ok.content, 'ok\n');
    const { resources } = await conn.client.listResources();
    assert.deepEqual(
      resources.map((r) => r.uri).sort(),
      ['skill://pct/SKILL.md', 'skill://pct/ok.txt'],
    );
  });
});

describe('root entries: trimmed, empty ones skipped, relative ones against the working directory', () => {
  let base;
  let cwd;
  before(() => {
    base = freshDir('skill-mcp-parity-');
    write(join(base, 'solo-kit', 'SKILL.md'), skillMd('name: solo-kit\ndescription: A root that is a skill.', 'solo\n'));
    write(join(base, 'grove', 'oak', 'SKILL.md'), skillMd('name: oak\ndescription: d', 'oak\n'));
    write(join(base, 'grove', 'skills', 'elm', 'SKILL.md'), skillMd('name: elm\ndescription: d', 'elm\n'));
    symlinkSync(join(base, 'grove'), join(base, 'grove-link'));
    cwd = process.cwd();
    // The server inherits this process's working directory.
    process.chdir(base);
  });
  after(() => {
    process.chdir(cwd);
    removeDir(base);
  });

  for (const variable of ['SKILLS_DIR', 'MCP_SKILLS_PATH']) {
    test(`${variable}="  solo-kit/ :: grove  "`, async () => {
      await withServer({ [variable]: '  solo-kit/ :: grove  ' }, async (conn) => {
        const list = await listOf(conn.client);
        assert.deepEqual(list.roots, [join(base, 'solo-kit'), join(base, 'grove')]);
        assert.equal(list.rootsFrom, variable);
        assert.deepEqual(
          list.skills.map((s) => [s.name, s.source]),
          [
            ['solo-kit', join(base, 'solo-kit')],
            ['oak', join(base, 'grove')],
            ['elm', join(base, 'grove')],
          ],
        );
        assert.deepEqual(list.problems, []);
      });
    });
  }

  test('source is the root as configured, even when the root is reached through a link', async () => {
    await withServer({ SKILLS_DIR: ' ./grove-link/ ' }, async (conn) => {
      const list = await listOf(conn.client);
      assert.deepEqual(list.roots, [join(base, 'grove-link')]);
      for (const s of list.skills) assert.equal(s.source, join(base, 'grove-link'), s.name);
      const load = await callJson(conn.client, 'skill_load', { name: 'oak' });
      assert.equal(load.json.source, join(base, 'grove-link'));
    });
  });

  test('a blank-only list falls back as if unset', async () => {
    await withServer({ SKILLS_DIR: ' : ', MCP_SKILLS_PATH: undefined }, async (conn) => {
      const list = await listOf(conn.client);
      assert.equal(list.rootsFrom, 'default');
      assert.ok(!list.skills.some((s) => s.name === 'oak'));
    });
  });
});

// The rules measured against the reference on a tree built here: declared scripts that
// are missing, skill_load's effective list, hosted markers that look unset, links in a
// skill, lower case first among case ties, grant problems last.
describe('declared scripts, grants, links and collation as the reference has them', () => {
  let base;
  let root;
  before(() => {
    base = freshDir('skill-mcp-parity2-');
    root = join(base, 'skills');
    const run = 'mcp-host:\n  version: 1\n  run:\n    - {script: here.js, interpreter: node}\n' +
      '    - {script: gone.js, interpreter: node}\n';
    write(join(root, 'tool', 'SKILL.md'), skillMd(`name: tool\ndescription: Runs.\n${run}`, 'Body.\n'));
    write(join(root, 'tool', 'here.js'), 'console.log(1)\n');
    write(join(root, 'tool', 'docs', 'real.txt'), 'through the link\n');
    symlinkSync('real.txt', join(root, 'tool', 'docs', 'alias.txt'));
    write(join(base, 'outside.txt'), 'outside\n');
    symlinkSync(join(base, 'outside.txt'), join(root, 'tool', 'leak.txt'));
    for (const name of ['Apple', 'apple', 'banana']) {
      write(join(root, name, 'SKILL.md'), skillMd(`name: ${name}\ndescription: Fruit.`, 'Body.\n'));
    }
  });
  after(() => removeDir(base));

  test('a missing declared script stays declared; skill_run refuses it at the path check', async () => {
    await withServer({ SKILLS_DIR: root }, async ({ client }) => {
      const list = await listOf(client);
      const tool = list.skills.find((s) => s.name === 'tool');
      assert.deepEqual(tool.scripts.map((s) => s.script), ['here.js', 'gone.js']);
      assert.equal(tool.executable, true);
      const missing = problemsOf(list, 'declared-script-missing');
      assert.deepEqual(missing.map((p) => p.path), [join(root, 'tool')]);
      assert.ok(missing[0].detail.includes('gone.js'), missing[0].detail);
      const load = await callJson(client, 'skill_load', { name: 'tool' });
      assert.deepEqual(load.json.scripts, [
        { script: 'here.js', interpreter: 'node', runnableHere: true },
        { script: 'gone.js', interpreter: 'node', runnableHere: true },
      ]);
      const runGone = await callJson(client, 'skill_run', { name: 'tool', script: 'gone.js' });
      assert.equal(runGone.isError, true);
      assert.match(runGone.text, /PATH_REFUSED/);
    });
  });

  test('links in a skill: neither listed nor counted nor a problem; skill_file reads one inside', async () => {
    await withServer({ SKILLS_DIR: root }, async ({ client }) => {
      const list = await listOf(client);
      const load = await callJson(client, 'skill_load', { name: 'tool' });
      const paths = load.json.files.map((f) => f.path);
      assert.deepEqual(paths, ['docs/real.txt', 'here.js', 'SKILL.md']);
      assert.equal(list.skills.find((s) => s.name === 'tool').files, 3);
      assert.deepEqual(problemsOf(list, 'symlink-escape'), []);
      const file = await callJson(client, 'skill_file', { name: 'tool', paths: ['docs/alias.txt'] });
      assert.equal(file.json.files[0].content, 'through the link\n', file.text);
    });
  });

  test('names equal but for case: lower case first, as localeCompare', async () => {
    await withServer({ SKILLS_DIR: root }, async ({ client }) => {
      const list = await listOf(client);
      assert.deepEqual(list.skills.map((s) => s.name), ['apple', 'Apple', 'banana', 'tool']);
    });
  });

  test('skill_load.scripts is the effective list: [] hosted, [] under an empty or malformed grant, the granted ones', async () => {
    const cases = [
      [{ MCP_SKILLS_PATH: root }, []],
      [{ SKILLS_DIR: root, MCP_SKILL_RUN: '[]' }, []],
      [{ SKILLS_DIR: root, MCP_SKILL_RUN: 'not json' }, []],
      [{ SKILLS_DIR: root, MCP_SKILL_RUN: '[{"skill":"tool","script":"gone.js"}]' }, ['gone.js']],
    ];
    for (const [env, want] of cases) {
      await withServer(env, async ({ client }) => {
        const load = await callJson(client, 'skill_load', { name: 'tool' });
        assert.deepEqual(load.json.scripts.map((s) => s.script), want, JSON.stringify(env));
      });
    }
  });

  test('a hosted marker counts only when set: blank, undefined, null and ${...} are unset', async () => {
    for (const value of ['', '   ', 'undefined', 'null', '${MCP_DATA_DIR}']) {
      await withServer({ SKILLS_DIR: root, MCP_DATA_DIR: value }, async ({ client }) => {
        const list = await listOf(client);
        assert.equal(list.grantFrom, 'declaration', `MCP_DATA_DIR=${JSON.stringify(value)}`);
      });
    }
    await withServer({ SKILLS_DIR: root, MCP_DATA_DIR: join(base, 'data') }, async ({ client }) => {
      assert.equal((await listOf(client)).grantFrom, 'hosted-default');
    });
  });

  test('grant problems come last', async () => {
    await withServer({ SKILLS_DIR: root, MCP_SKILL_RUN: '[{"skill":"nope","script":"x.js"}]' }, async ({ client }) => {
      const list = await listOf(client);
      assert.equal(list.problems.at(-1).reason, 'grant', JSON.stringify(list.problems));
      assert.equal(list.problems.at(-2).reason, 'declared-script-missing', JSON.stringify(list.problems));
    });
  });
});
