// Module scripts through skill_run behave as `node script` (docs/wire.md §4):
// each case runs one file of a real skill through the server (preview, then the token)
// and the same file with a plain `node <file> <args>` from the skill directory, and the
// two must agree on stdout and the exit code. The scripts print only what node's module
// semantics decide (paths, URLs, argv, module identity, globals), never a pid or a uid.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, confirmedRun, connect, serverEnv } from './lib.mjs';

const ARGS = ['plain', 'two words', '--flag=x', '-e', ''];

// The skill's files, by path under the skill directory. Every `.js`/`.mjs`/`.cjs` file
// under scripts/ and mod/ that is not a sibling (`sib*`) is declared runnable.
const FILES = {
  // CommonJS (no package.json on the way up: .js is CommonJS).
  'scripts/cjs/sib.js': "exports.value = 'cjs sibling';\nexports.isMain = require.main === module;\n",
  'scripts/cjs/sib_es.mjs': "export const value = 'es sibling';\nexport const url = import.meta.url;\n",
  'scripts/cjs/require_sibling.js':
    "const s = require('./sib');\n" +
    "console.log(JSON.stringify({ value: s.value, siblingIsMain: s.isMain, resolved: require.resolve('./sib') }));\n",
  'scripts/cjs/import_es_sibling.js':
    "import('./sib_es.mjs').then((m) => console.log(JSON.stringify({ value: m.value, url: m.url })));\n",
  'scripts/cjs/paths.js': 'console.log(JSON.stringify({ filename: __filename, dirname: __dirname }));\n',
  'scripts/cjs/argv.js': 'console.log(JSON.stringify(process.argv.slice(1)));\n',
  'scripts/cjs/main.js':
    'console.log(JSON.stringify({ main: require.main === module, id: module.id, mainFile: require.main.filename,\n' +
    '  mainModule: process.mainModule === module, loaded: module.loaded }));\n',
  'scripts/cjs/globals.js':
    'const names = () => Object.getOwnPropertyNames(globalThis).sort().join() + " process: " +\n' +
    '  Object.getOwnPropertyNames(process).sort().join();\n' +
    "const now = names();\nsetTimeout(() => console.log(JSON.stringify({ now, later: names(), moduleIn: 'module' in globalThis })));\n",
  // ES modules by extension.
  'scripts/esm/sib.mjs': "export const value = 'static sibling';\nexport const url = import.meta.url;\n",
  'scripts/esm/sib_dyn.mjs': "export default 'dynamic sibling';\n",
  'scripts/esm/sib_cjs.cjs': "module.exports = { value: 'cjs beside an es module', isMain: require.main === module };\n",
  'scripts/esm/static_import.mjs':
    "import { value, url } from './sib.mjs';\nconsole.log(JSON.stringify({ value, url }));\n",
  'scripts/esm/dynamic_import.mjs':
    "const m = await import('./sib_dyn.mjs');\nconsole.log(JSON.stringify({ value: m.default }));\n",
  'scripts/esm/require_cjs.mjs':
    "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n" +
    "const s = require('./sib_cjs.cjs');\nconsole.log(JSON.stringify({ ...s, main: require.main === undefined }));\n",
  'scripts/esm/tla.mjs':
    "const v = await new Promise((r) => setTimeout(() => r('settled'), 20));\nconsole.log(v);\n",
  'scripts/esm/pending.mjs': "console.log('before');\nawait new Promise(() => {});\nconsole.log('after');\n",
  'scripts/esm/meta.mjs':
    "console.log(JSON.stringify({ url: import.meta.url, resolved: import.meta.resolve('./sib.mjs'),\n" +
    "  filenameType: typeof __filename, requireType: typeof require }));\n",
  'scripts/esm/argv.mjs': 'console.log(JSON.stringify({ argv: process.argv.slice(1), execArgv: process.execArgv }));\n',
  'scripts/esm/globals.mjs':
    'const names = () => Object.getOwnPropertyNames(globalThis).sort().join() + " process: " +\n' +
    '  Object.getOwnPropertyNames(process).sort().join();\n' +
    "const now = names();\nsetTimeout(() => console.log(JSON.stringify({ now, later: names(), moduleIn: 'module' in globalThis })));\n",
  'scripts/esm/throws.mjs': "console.log('ran');\nthrow new Error('es module boom');\n",
  'scripts/esm/fork.mjs':
    "import { fork } from 'node:child_process';\n" +
    "const c = fork(new URL('./sib_child.cjs', import.meta.url), ['x']);\n" +
    'c.on(\'message\', (m) => { console.log(JSON.stringify(m)); c.disconnect(); });\n',
  'scripts/esm/sib_child.cjs': 'process.send({ execArgv: process.execArgv, argv: process.argv.slice(1) });\n',
  'scripts/cjs/throws.js': "const a = 1;\nnull.boom;\n",
  // No declared type: module syntax makes an ES module; a typeless package.json warns.
  'scripts/detect/sib_cjs.js': "exports.value = 'typeless cjs sibling';\n",
  'scripts/detect/imports.js':
    "import { createRequire } from 'node:module';\nconst s = createRequire(import.meta.url)('./sib_cjs.js');\n" +
    'console.log(JSON.stringify({ value: s.value, tla: await Promise.resolve(1), url: import.meta.url, argv: process.argv.slice(1) }));\n',
  'typeless/package.json': '{ "name": "typeless" }\n',
  'typeless/exports.js': "export const x = 1;\nconsole.log(JSON.stringify({ url: import.meta.url }));\n",
  // A "type": "module" package: .js is an ES module, .cjs stays CommonJS.
  'mod/package.json': '{ "name": "mod", "type": "module" }\n',
  'mod/sib.js': "export const value = 'module-package sibling';\n",
  'mod/static_import.js':
    "import { value } from './sib.js';\nconst later = await Promise.resolve('tla');\n" +
    'console.log(JSON.stringify({ value, later, url: import.meta.url, argv: process.argv.slice(1) }));\n',
  'mod/still_cjs.cjs': 'console.log(JSON.stringify({ main: require.main === module, filename: __filename }));\n',
};
const RUNNABLE = Object.keys(FILES).filter((p) => /\.(c|m)?js$/.test(p) && !/\/sib[^/]*$/.test(p));

let root;
let skill;
before(() => {
  root = freshDir('skill-mcp-esm-');
  skill = join(root, 'esm');
  const run = RUNNABLE.map((p) => `    - script: ${p}\n      interpreter: node\n      timeout: 60`).join('\n');
  const files = { 'SKILL.md': skillMd(`name: esm\ndescription: Module scripts.\nmcp-host:\n  version: 1\n  run:\n${run}`, '\n# ESM\n'), ...FILES };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(skill, rel)), { recursive: true });
    writeFileSync(join(skill, rel), text);
  }
  spawnSync('chmod', ['-R', 'a+rX', root]);
  chmodSync(root, 0o755);
});
after(() => removeDir(root));

/** `node <file> <args>` from the skill directory: what the reference server runs. */
function direct(script, args) {
  const r = spawnSync('node', [join(skill, script), ...args], { cwd: skill, encoding: 'utf8', env: { PATH: process.env.PATH, LANG: 'C.UTF-8' } });
  return { stdout: r.stdout, stderr: r.stderr, exitCode: r.status };
}

/** The same file through skill_run: the preview, then the confirmed run's receipt. */
async function throughServer(conn, script, args) {
  const call = { name: 'esm', script, args };
  const done = await confirmedRun(conn.client, call);
  assert.equal(done.isError, false, done.text);
  assert.equal(done.json.timedOut, false, done.text);
  return done.json;
}

async function assertSameAsNode(conn, script, args = ARGS) {
  const want = direct(script, args);
  const got = await throughServer(conn, script, args);
  assert.equal(got.stdout, want.stdout, `stdout of ${script}; server stderr: ${got.stderr}`);
  assert.equal(got.exitCode, want.exitCode, `exit code of ${script}; server stderr: ${got.stderr}`);
  return { want, got };
}

describe('module scripts run as `node script` runs them', () => {
  let conn;
  before(async () => {
    conn = await connect({ env: { SKILLS_DIR: root } });
  });
  after(async () => conn?.close());

  test('every case file is declared and runnable', async () => {
    const { json } = await callJson(conn.client, 'skill_list');
    const esm = json.skills.find((s) => s.name === 'esm');
    assert.ok(esm, JSON.stringify(json.problems));
    assert.deepEqual(esm.scripts.map((s) => s.script).sort(), [...RUNNABLE].sort());
  });

  test('CommonJS: require of a CommonJS sibling', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/cjs/require_sibling.js');
    assert.equal(JSON.parse(want.stdout).value, 'cjs sibling');
  });
  test('CommonJS: import() of an ES sibling', async () => {
    await assertSameAsNode(conn, 'scripts/cjs/import_es_sibling.js');
  });
  test('CommonJS: __filename and __dirname', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/cjs/paths.js');
    assert.equal(JSON.parse(want.stdout).filename, join(skill, 'scripts/cjs/paths.js'));
  });
  test('CommonJS: process.argv', async () => {
    await assertSameAsNode(conn, 'scripts/cjs/argv.js');
  });
  test('CommonJS: require.main === module', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/cjs/main.js');
    assert.equal(JSON.parse(want.stdout).main, true);
  });
  test('CommonJS: the global and process objects hold what they hold under plain node, now and later', async () => {
    await assertSameAsNode(conn, 'scripts/cjs/globals.js');
  });

  test('.mjs: static import of a sibling', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/esm/static_import.mjs');
    assert.equal(JSON.parse(want.stdout).value, 'static sibling');
  });
  test('.mjs: import() of an ES sibling under top-level await', async () => {
    await assertSameAsNode(conn, 'scripts/esm/dynamic_import.mjs');
  });
  test('.mjs: require of a CommonJS sibling through createRequire', async () => {
    await assertSameAsNode(conn, 'scripts/esm/require_cjs.mjs');
  });
  test('.mjs: top-level await', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/esm/tla.mjs');
    assert.equal(want.stdout, 'settled\n');
  });
  test('.mjs: a top-level await that never settles exits 13', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/esm/pending.mjs');
    assert.equal(want.exitCode, 13);
  });
  test('.mjs: import.meta.url and import.meta.resolve; no CommonJS names', async () => {
    const { want } = await assertSameAsNode(conn, 'scripts/esm/meta.mjs');
    assert.equal(JSON.parse(want.stdout).url, `file://${join(skill, 'scripts/esm/meta.mjs')}`);
  });
  test('.mjs: process.argv and an empty process.execArgv', async () => {
    await assertSameAsNode(conn, 'scripts/esm/argv.mjs');
  });
  test('.mjs: the global and process objects hold what they hold under plain node, now and later', async () => {
    await assertSameAsNode(conn, 'scripts/esm/globals.mjs');
  });
  test('.mjs: child_process.fork starts a plain node', async () => {
    await assertSameAsNode(conn, 'scripts/esm/fork.mjs');
  });
  test('.mjs: an error at the top level exits 1 and is reported as node reports it', async () => {
    const { want, got } = await assertSameAsNode(conn, 'scripts/esm/throws.mjs');
    assert.equal(want.exitCode, 1);
    // The first lines (where, the source line, the caret, the error) match; node's own
    // internal stack frames below them differ.
    const head = (s) => s.split('\n').slice(0, 5).join('\n');
    assert.equal(head(got.stderr), head(want.stderr));
    assert.match(head(got.stderr), /Error: es module boom/);
  });

  test('CommonJS: an error is reported with the script\'s own source line', async () => {
    const { want, got } = await assertSameAsNode(conn, 'scripts/cjs/throws.js');
    assert.equal(want.exitCode, 1);
    const head = (s) => s.split('\n').slice(0, 5).join('\n');
    assert.equal(head(got.stderr), head(want.stderr));
    assert.ok(got.stderr.startsWith(`${join(skill, 'scripts/cjs/throws.js')}:2\n`), got.stderr);
  });

  test('no declared type: module syntax runs as an ES module, with nothing on stderr', async () => {
    const { want, got } = await assertSameAsNode(conn, 'scripts/detect/imports.js');
    assert.equal(JSON.parse(want.stdout).value, 'typeless cjs sibling');
    assert.equal(got.stderr, want.stderr);
    assert.equal(got.stderr, '');
  });
  test('no declared type under a typeless package.json: node\'s warning, word for word', async () => {
    const { want, got } = await assertSameAsNode(conn, 'typeless/exports.js');
    const noPid = (s) => s.replace(/^\(node:\d+\)/gm, '(node:PID)');
    assert.match(want.stderr, /MODULE_TYPELESS_PACKAGE_JSON/);
    assert.equal(noPid(got.stderr), noPid(want.stderr));
  });

  test('"type": "module" package: .js is an ES module (static import, top-level await)', async () => {
    const { want } = await assertSameAsNode(conn, 'mod/static_import.js');
    assert.equal(JSON.parse(want.stdout).value, 'module-package sibling');
  });
  test('"type": "module" package: .cjs stays CommonJS', async () => {
    const { want } = await assertSameAsNode(conn, 'mod/still_cjs.cjs');
    assert.equal(JSON.parse(want.stdout).main, true);
  });
});

// The same as namespaces.test.mjs: only a host that refuses user namespaces skips.
function namespacesRefusedHere() {
  const r = spawnSync(BIN, ['doctor'], { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'on' }), encoding: 'utf8' });
  const refused = /cannot create a user and mount namespace here \((Operation not permitted|Permission denied|No space left on device)\)/;
  return `${r.stdout}\n${r.stderr}`.split('\n').find((l) => refused.test(l)) ?? '';
}

describe('module scripts with SKILL_MCP_NAMESPACES=on', () => {
  test('static import, top-level await and import.meta.url in the private view', async (t) => {
    const why = namespacesRefusedHere();
    if (why) return t.skip(`this host refuses user namespaces: ${why.trim()}`);
    const conn = await connect({ env: { SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'on' } });
    try {
      await assertSameAsNode(conn, 'mod/static_import.js');
      await assertSameAsNode(conn, 'scripts/esm/dynamic_import.mjs');
    } finally {
      await conn.close();
    }
  });
});
