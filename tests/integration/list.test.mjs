// skill_list over a real tree holding every problem kind (docs/wire.md §3), the good
// cases next to them, and the configuration variants (docs/wire.md §7).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildDiscoveryTree, removeDir } from './fixtures.mjs';
import { assertKeyOrder, callJson, connect, problemsOf } from './lib.mjs';

const LIST_KEYS = ['roots', 'rootsFrom', 'grantFrom', 'grantNote?', 'grantError?', 'skills', 'problems'];
const SKILL_KEYS = [
  'name',
  'description?',
  'whenToUse?',
  'source',
  'files',
  'bytes',
  'executable',
  'scripts',
  'unavailableScripts',
  'ungrantedScripts?',
  'declaredEgress?',
];

let tree;
before(() => {
  tree = buildDiscoveryTree();
});
after(() => removeDir(tree.base));

async function listWith(env) {
  const conn = await connect({ env });
  try {
    const { isError, json, text } = await callJson(conn.client, 'skill_list');
    assert.equal(isError, false, text);
    assert.ok(json, `skill_list answers JSON: ${text.slice(0, 200)}`);
    assert.ok(!text.includes('\n'), 'tool payloads are minified');
    return json;
  } finally {
    await conn.close();
  }
}

/** A problem with `reason` whose path is `dir` itself or something inside it. */
function problemAt(list, reason, dir) {
  return problemsOf(list, reason).find((p) => p.path === dir || p.path.startsWith(`${dir}/`));
}

/** A problem about one file `rel` inside skill `dir`: the file's own path, or the skill's naming it. */
function problemForFile(list, reason, dir, rel) {
  return problemsOf(list, reason).find(
    (p) => p.path === join(dir, rel) || ((p.path === dir || p.path.startsWith(`${dir}/`)) && p.detail.includes(rel)),
  );
}

describe('skill_list over the problem tree (SKILLS_DIR, standalone)', () => {
  let list;
  let roots;
  before(async () => {
    roots = [tree.rootA, tree.rootB, tree.missingRoot, tree.fileRoot];
    list = await listWith({ SKILLS_DIR: roots.join(':') });
  });
  const names = () => list.skills.map((s) => s.name);
  const skill = (name) => list.skills.find((s) => s.name === name);
  const show = () => JSON.stringify(list.problems, null, 1);

  test('top-level shape and key order', () => {
    assertKeyOrder(list, LIST_KEYS, 'skill_list');
    assert.deepEqual(list.roots, roots);
    assert.equal(list.rootsFrom, 'SKILLS_DIR');
    assert.equal(list.grantFrom, 'declaration');
    assert.equal(list.grantNote, undefined, 'grantNote only when hosted');
    for (const s of list.skills) {
      assertKeyOrder(s, SKILL_KEYS, `skill ${s.name}`);
      for (const sc of s.scripts) assert.deepEqual(Object.keys(sc), ['script', 'interpreter', 'timeoutMs', 'env']);
      for (const u of s.unavailableScripts) assert.deepEqual(Object.keys(u), ['script', 'reason']);
      for (const u of s.ungrantedScripts ?? []) assert.deepEqual(Object.keys(u), ['script', 'reason']);
    }
    for (const p of list.problems) {
      assert.deepEqual(Object.keys(p), ['path', 'reason', 'detail']);
      for (const v of Object.values(p)) assert.equal(typeof v, 'string');
      assert.ok(p.detail.length > 10, `detail says something: ${JSON.stringify(p)}`);
    }
  });

  test('the skills served, and the ones refused', () => {
    const served = names();
    for (const n of ['good', 'decl-unknown', 'decl-anchor', 'decl-v2', 'mismatch', 'missing-script', 'oddpaths', 'many-files', 'linked-target', 'heavy']) {
      assert.ok(served.includes(n), `${n} is served (served: ${served})`);
    }
    for (const n of ['dup', 'bad name!', 'bad', 'escape-link', 'secret-skill', 'alias', 'good-again', 'no-md', 'fifo-md', 'dir-md', 'malformed', 'someone-else', 'skills', 'shared']) {
      assert.ok(!served.includes(n), `${n} is not served`);
    }
    assert.equal(served.filter((n) => n === 'good').length, 1, 'a directory reached twice is one skill');
  });

  test('the good skill: fields, scripts, unavailable python script, egress', () => {
    const s = skill('good');
    assert.equal(s.description, 'A well-formed skill used by the read-tool tests.');
    assert.equal(s.whenToUse, 'When a test needs a skill that has everything.');
    assert.equal(typeof s.source, 'string');
    assert.equal(s.executable, true);
    assert.deepEqual(s.scripts, [{ script: 'scripts/hello.js', interpreter: 'node', timeoutMs: 5000, env: ['GOOD_VAR'] }]);
    assert.equal(s.unavailableScripts.length, 1);
    assert.equal(s.unavailableScripts[0].script, 'scripts/tool.py');
    assert.match(s.unavailableScripts[0].reason, /python/);
    assert.match(s.unavailableScripts[0].reason, /node/, 'names the interpreters this deployment runs');
    assert.equal(s.ungrantedScripts, undefined);
    assert.deepEqual(s.declaredEgress, ['api.example.invalid']);
    assert.ok(Number.isInteger(s.files) && s.files >= 9, `files ${s.files}`);
    assert.ok(s.bytes >= tree.bigSize, `bytes ${s.bytes}`);
  });

  test('files and bytes agree with skill_load', async () => {
    const conn = await connect({ env: { SKILLS_DIR: roots.join(':') } });
    try {
      const { json } = await callJson(conn.client, 'skill_load', { name: 'good' });
      const s = skill('good');
      assert.equal(s.files, json.files.length);
      assert.equal(s.bytes, json.files.reduce((sum, f) => sum + f.size, 0));
    } finally {
      await conn.close();
    }
  });

  test('no duplicate-name for a directory reached twice', () => {
    for (const p of problemsOf(list, 'duplicate-name')) {
      assert.ok(!p.path.startsWith(tree.good), `good is not a duplicate: ${JSON.stringify(p)}`);
    }
  });

  test('root-unreadable: a missing root and a root that is a regular file', () => {
    const paths = problemsOf(list, 'root-unreadable').map((p) => p.path);
    assert.ok(paths.includes(tree.missingRoot), show());
    assert.ok(paths.includes(tree.fileRoot), show());
    assert.equal(paths.length, 2, show());
  });

  test('no-skill-md', () => {
    assert.ok(problemAt(list, 'no-skill-md', tree.dirs.noMd), show());
  });

  test('unreadable-skill-md: SKILL.md as a FIFO; no-skill-md: SKILL.md as a directory', () => {
    assert.ok(problemAt(list, 'unreadable-skill-md', tree.dirs.fifoMd), show());
    assert.ok(problemAt(list, 'no-skill-md', tree.dirs.dirMd), show());
    assert.equal(problemAt(list, 'unreadable-skill-md', tree.dirs.dirMd), undefined, show());
  });

  test('malformed-frontmatter', () => {
    assert.ok(problemAt(list, 'malformed-frontmatter', tree.dirs.malformed), show());
  });

  test('declaration: unknown keys are named, the skill keeps its instructions', () => {
    const ps = problemsOf(list, 'declaration').filter((p) => p.path.startsWith(tree.dirs.declUnknown));
    assert.ok(ps.some((p) => p.detail.includes('colour')), show());
    assert.ok(ps.some((p) => p.detail.includes('flavour')), show());
    assert.ok(skill('decl-unknown'), 'still listed');
  });

  test('declaration: an anchor refuses the block; the skill stays, its scripts go', () => {
    assert.ok(problemAt(list, 'declaration', tree.dirs.declAnchor), show());
    const s = skill('decl-anchor');
    assert.ok(s);
    assert.deepEqual(s.scripts, []);
    assert.equal(s.executable, false);
  });

  test('declaration: version 2 is refused wholesale; the skill stays, its scripts go', () => {
    assert.ok(problemAt(list, 'declaration', tree.dirs.declV2), show());
    const s = skill('decl-v2');
    assert.ok(s);
    assert.deepEqual(s.scripts, []);
    assert.equal(s.executable, false);
  });

  test('duplicate-name: both directories refused and named', () => {
    const ps = problemsOf(list, 'duplicate-name');
    assert.ok(ps.length >= 1, show());
    const text = ps.map((p) => `${p.path} ${p.detail}`).join('\n');
    assert.ok(text.includes(tree.dirs.dupA), `names ${tree.dirs.dupA}: ${text}`);
    assert.ok(text.includes(tree.dirs.dupB), `names ${tree.dirs.dupB}: ${text}`);
    assert.ok(!names().includes('dup'));
  });

  test('name-mismatch: served under the directory name', () => {
    const p = problemAt(list, 'name-mismatch', tree.dirs.mismatch);
    assert.ok(p, show());
    assert.ok(p.detail.includes('someone-else'), p.detail);
    assert.ok(skill('mismatch'));
  });

  test('unusable-name', () => {
    assert.ok(problemAt(list, 'unusable-name', tree.dirs.badName), show());
  });

  test('declared-script-missing', () => {
    const p = problemAt(list, 'declared-script-missing', tree.dirs.missingScript);
    assert.ok(p, show());
    assert.ok(p.detail.includes('scripts/gone.js'), p.detail);
  });

  test('symlink-escape: a skill directory linking out of the root', () => {
    const p = problemsOf(list, 'symlink-escape').find(
      (q) => q.path === tree.dirs.escapeLink || q.path === join(tree.outside, 'secret-skill'),
    );
    assert.ok(p, show());
  });

  test('a file link inside a skill pointing outside: skipped silently, no problem', () => {
    assert.equal(problemForFile(list, 'symlink-escape', tree.good, 'docs/passwd-link'), undefined, show());
  });

  test('unusable-path: backslash and percent escape, left out of the manifest', async () => {
    assert.ok(problemForFile(list, 'unusable-path', tree.dirs.oddpaths, 'a\\b.txt'), show());
    assert.ok(problemForFile(list, 'unusable-path', tree.dirs.oddpaths, '100%41.txt'), show());
    assert.equal(skill('oddpaths').files, 2, 'SKILL.md and ok.txt only');
  });

  test('file-limit: the manifest lists what was walked', () => {
    assert.ok(problemAt(list, 'file-limit', tree.dirs.manyFiles), show());
    const s = skill('many-files');
    assert.ok(s.files > 0 && s.files <= 2000, `files ${s.files}`);
  });

  test('a symlinked skill dir inside the root is served under the target name', () => {
    assert.ok(skill('linked-target'));
    const p = problemsOf(list, 'name-mismatch').find(
      (q) => q.path === tree.dirs.linkedTarget || q.path === tree.dirs.aliasLink,
    );
    assert.ok(p, `reported as name-mismatch: ${show()}`);
    assert.ok(!problemsOf(list, 'symlink-escape').some((q) => q.path === tree.dirs.aliasLink));
  });

  test('nothing from outside the roots is ever named as a skill', () => {
    assert.ok(!JSON.stringify(list.skills).includes('secret'));
  });
});

describe('skill-limit', () => {
  test('34 skills: 32 served, the rest reported', async () => {
    const list = await listWith({ SKILLS_DIR: tree.manyRoot });
    assert.equal(list.skills.length, 32);
    const ps = problemsOf(list, 'skill-limit');
    // One problem (scan.cc), at the configured roots joined with ':', naming the skills
    // left out: the first 32 by name are served.
    const served = new Set(list.skills.map((s) => s.name));
    const text = ps.map((p) => `${p.path} ${p.detail}`).join('\n');
    assert.equal(ps.length, 1, text);
    assert.equal(ps[0].path, tree.manyRoot);
    const leftOut = [];
    for (let i = 0; i < 34; i += 1) {
      const name = `s${String(i).padStart(2, '0')}`;
      if (!served.has(name)) {
        leftOut.push(name);
        assert.ok(text.includes(name), `${name} named: ${text}`);
      }
    }
    assert.deepEqual(leftOut, ['s32', 's33']);
  });
});

describe('grants and hosting (docs/wire.md §7)', () => {
  test('MCP_SKILL_RUN naming an undeclared script: a grant problem, nothing granted by it', async () => {
    const list = await listWith({
      SKILLS_DIR: tree.rootA,
      MCP_SKILL_RUN: JSON.stringify([{ skill: 'good', script: 'scripts/undeclared.js' }]),
    });
    assert.equal(list.grantFrom, 'MCP_SKILL_RUN');
    const ps = problemsOf(list, 'grant');
    assert.equal(ps.length, 1, JSON.stringify(list.problems));
    assert.ok(ps[0].detail.includes('scripts/undeclared.js'), ps[0].detail);
    const good = list.skills.find((s) => s.name === 'good');
    assert.deepEqual(good.scripts, []);
    assert.equal(good.executable, false);
    assert.deepEqual(good.ungrantedScripts.map((u) => u.script), ['scripts/hello.js']);
  });

  test('MCP_SKILL_RUN granting a declared script: exactly that script, only the granted variables', async () => {
    const list = await listWith({
      SKILLS_DIR: tree.rootA,
      MCP_SKILL_RUN: JSON.stringify([{ skill: 'good', script: 'scripts/hello.js', env: ['NOT_ASKED'] }]),
    });
    const good = list.skills.find((s) => s.name === 'good');
    assert.equal(good.scripts.length, 1);
    assert.equal(good.scripts[0].script, 'scripts/hello.js');
    assert.deepEqual(good.scripts[0].env, [], 'a variable the script did not ask for grants nothing');
    assert.equal(good.executable, true);
  });

  test('MCP_SKILL_RUN that does not parse: grantError, nothing granted', async () => {
    const list = await listWith({ SKILLS_DIR: tree.rootA, MCP_SKILL_RUN: '[{"skill": "good", "script": 7}]' });
    assert.equal(typeof list.grantError, 'string');
    assertKeyOrder(list, LIST_KEYS, 'skill_list');
    for (const s of list.skills) assert.deepEqual(s.scripts, [], `${s.name} has no runnable script`);
  });

  test('hosted (MCP_SKILLS_PATH) without a grant: nothing runs, grantNote says why', async () => {
    const list = await listWith({ MCP_SKILLS_PATH: tree.rootA, SKILLS_DIR: tree.rootB });
    assert.equal(list.rootsFrom, 'MCP_SKILLS_PATH');
    assert.deepEqual(list.roots, [tree.rootA], 'MCP_SKILLS_PATH wins over SKILLS_DIR');
    assert.equal(list.grantFrom, 'hosted-default');
    assert.equal(typeof list.grantNote, 'string');
    const good = list.skills.find((s) => s.name === 'good');
    assert.deepEqual(good.scripts, []);
    assert.equal(good.executable, false);
    assert.deepEqual(good.ungrantedScripts.map((u) => u.script), ['scripts/hello.js']);
    assert.deepEqual(good.unavailableScripts.map((u) => u.script), ['scripts/tool.py']);
  });

  test('hosted by marker (MCP_DATA_DIR) with SKILLS_DIR: still the hosted default', async () => {
    const list = await listWith({ SKILLS_DIR: tree.rootA, MCP_DATA_DIR: tree.base });
    assert.equal(list.rootsFrom, 'SKILLS_DIR');
    assert.equal(list.grantFrom, 'hosted-default');
    assert.deepEqual(list.skills.find((s) => s.name === 'good').scripts, []);
  });

  test('no root configured: the bundled default', async () => {
    const list = await listWith({});
    assert.equal(list.rootsFrom, 'default');
    assert.equal(list.roots.length, 1);
  });
});
