// SKILL_MCP_REQUIRE_TOOLS=1 (exported by .ci/run) turns a missing verifier into a failure
// (required_tools.mjs), and .ci/check-node refuses a node older than 20 (.ci/setup). Each
// test file is run here as CI would run it, with its tool taken away.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { freshDir, removeDir } from './fixtures.mjs';
import { REPO } from './lib.mjs';

let base;
before(() => {
  base = freshDir('skill-mcp-required-');
  // Makes `import 'mcp-client-v2'` fail as it does where the package is not installed.
  writeFileSync(
    join(base, 'hooks.mjs'),
    `export async function resolve(specifier, context, next) {
  if (specifier.startsWith('mcp-client-v2')) {
    throw Object.assign(new Error('Cannot find package ' + specifier), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return next(specifier, context);
}\n`,
  );
  writeFileSync(
    join(base, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(base, 'hooks.mjs')).href)});\n`,
  );
});
after(() => removeDir(base));

const TOOL_VARS = ['SKILL_MCP_INSPECTOR', 'SKILL_MCP_INSPECTOR_NODE', 'SKILL_MCP_CONFORMANCE', 'SKILL_MCP_SUPERGATEWAY'];

/** Runs one test file without its tools; {status, output}. */
function runWithout(file, { require, pattern, hideV2 = false }) {
  const env = { ...process.env };
  for (const v of [...TOOL_VARS, 'SKILL_MCP_REQUIRE_TOOLS', 'NODE_TEST_CONTEXT']) delete env[v];
  if (require) env.SKILL_MCP_REQUIRE_TOOLS = '1';
  const args = ['--test', '--test-reporter=tap'];
  if (pattern) args.push(`--test-name-pattern=${pattern}`);
  if (hideV2) args.push('--import', pathToFileURL(join(base, 'register.mjs')).href);
  args.push(file);
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 120000 });
  return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
}

// [file, the tool as the failure names it, its SKIP reason, how to run it]
const files = [
  ['skills_extension.test.mjs', 'the MCP Inspector CLI', 'SKILL_MCP_INSPECTOR and SKILL_MCP_INSPECTOR_NODE', { pattern: 'Inspector CLI' }],
  ['conformance.test.mjs', 'the conformance suite with supergateway', 'the conformance suite, supergateway or node >= 22 is not installed', {}],
  ['client_v2.test.mjs', 'the SDK v2 client (mcp-client-v2)', 'mcp-client-v2 is not installed', { hideV2: true }],
];

describe('a missing verifier', () => {
  for (const [file, what, reason, opts] of files) {
    test(`${file}: SKIP by default`, () => {
      const { status, output } = runWithout(file, { ...opts, require: false });
      assert.equal(status, 0, output);
      assert.ok(output.includes(`# SKIP`) && output.includes(reason), output);
      assert.doesNotMatch(output, /is required here/, output);
    });

    test(`${file}: a failure naming it under SKILL_MCP_REQUIRE_TOOLS=1`, () => {
      const { status, output } = runWithout(file, { ...opts, require: true });
      assert.notEqual(status, 0, output);
      assert.ok(output.includes(`not ok`), output);
      assert.ok(output.includes(`${what} is required here (SKILL_MCP_REQUIRE_TOOLS=1) but missing`), output);
    });
  }
});

describe('.ci/check-node', () => {
  /** check-node with a `node` on PATH that says it is version `node`. */
  const check = (node) => {
    const dir = join(base, `node-${node}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'node'), `#!/bin/sh\necho ${node}\n`);
    chmodSync(join(dir, 'node'), 0o755);
    return spawnSync('bash', [join(REPO, '.ci', 'check-node')], {
      env: { PATH: `${dir}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
  };

  test('refuses a node older than 20, saying so', () => {
    for (const v of ['18.19.0', '19.9.0']) {
      const r = check(v);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`node ${v.replaceAll('.', '\\.')} is older than 20`));
    }
  });

  test('accepts node 20 and later, and the node running this test', () => {
    for (const v of ['20.0.0', '22.23.3']) assert.equal(check(v).status, 0, v);
    const r = spawnSync('bash', [join(REPO, '.ci', 'check-node')], {
      env: { PATH: `${join(process.execPath, '..')}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
  });
});
