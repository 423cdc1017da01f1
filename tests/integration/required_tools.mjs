// The verifiers some integration tests drive (the MCP Inspector CLI, the conformance suite
// with supergateway, the SDK v2 client) SKIP where they are not installed, so a developer
// without them still runs the rest. Under SKILL_MCP_REQUIRE_TOOLS=1, which .ci/run exports,
// a missing one is a failure instead: CI cannot go green without them having run
// (tests/integration/README.md, "Running").
import assert from 'node:assert/strict';
import { test } from 'node:test';

export const REQUIRE_TOOLS = process.env.SKILL_MCP_REQUIRE_TOOLS === '1';

/**
 * The `skip` option for the cases that need `what`: false when nothing is `missing`,
 * else the reason. Under SKILL_MCP_REQUIRE_TOOLS=1 a missing tool also registers one
 * failing case (in the current suite) saying what is missing.
 */
export function skipOrRequire(missing, what) {
  if (!missing) return false;
  if (REQUIRE_TOOLS) {
    test(`${what} is installed (SKILL_MCP_REQUIRE_TOOLS=1)`, () => {
      assert.fail(`${what} is required here (SKILL_MCP_REQUIRE_TOOLS=1) but missing: ${missing}`);
    });
  }
  return missing;
}
