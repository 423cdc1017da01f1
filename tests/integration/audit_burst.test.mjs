// A reader of stderr that stops reading must not stall the broker (docs/audit.md, "Never
// blocking"): 1,000 runs with stderr unread keep every ping answered within a bound; the
// records that did not fit the bounded queue are counted, and the count the broker gives
// at exit plus the records that arrived make exactly 1,000.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, rpcOver, serverEnv, sleep } from './lib.mjs';

const RUNS = 1000;
const PING_BOUND_MS = 2000;
const MARK = '{"skill_mcp_audit":1,';

let root;
before(() => {
  root = freshDir('skill-mcp-audit-burst-');
  const dir = join(root, 'quick');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: quick\ndescription: Exits at once.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/quick.js\n      interpreter: node\n      timeout: 30\n', '\n# Quick\n'));
  writeFileSync(join(dir, 'scripts', 'quick.js'), '');
});
after(() => removeDir(root));

test(`${RUNS} runs with stderr unread: pings answered, records counted`, { timeout: 900000 }, async () => {
  const child = spawn(BIN, [], {
    env: serverEnv({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_AUDIT: 'stderr' }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // Nobody reads stderr: node's own buffer fills, then the pipe, then the broker's queue.
  child.stderr.pause();
  const exited = new Promise((r) => child.on('exit', (code) => r(code)));
  // rpcOver reads stderr for its messages; only stdout is needed here.
  const rpc = rpcOver({ stdout: child.stdout, stderr: { on() {} }, stdin: child.stdin }, 60000);
  const init = rpc.send('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'burst', version: '1' } });
  await rpc.answer(init);
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');

  const call = { name: 'quick', script: 'scripts/quick.js' };
  let slowest = 0;
  for (let i = 0; i < RUNS; i++) {
    const preview = (await rpc.answer(rpc.send('tools/call', { name: 'skill_run', arguments: call }))).result;
    const token = JSON.parse(preview.content[0].text).confirmToken;
    assert.ok(token, JSON.stringify(preview));
    const run = rpc.send('tools/call', { name: 'skill_run', arguments: { ...call, confirmToken: token } });
    // A ping while the run is in flight: the loop answers it, whatever stderr does.
    const t0 = Date.now();
    await rpc.answer(rpc.send('ping', {}), PING_BOUND_MS);
    slowest = Math.max(slowest, Date.now() - t0);
    const receipt = JSON.parse((await rpc.answer(run)).result.content[0].text);
    assert.equal(receipt.exitCode, 0, JSON.stringify(receipt));
  }
  assert.ok(slowest < PING_BOUND_MS, `slowest ping ${slowest} ms`);

  // The reader comes back; one more run, whose record counts every loss before it; then
  // the client leaves and the broker says what it lost in all.
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c.toString(); });
  child.stderr.resume();
  await sleep(500);
  const preview = (await rpc.answer(rpc.send('tools/call', { name: 'skill_run', arguments: call }))).result;
  const token = JSON.parse(preview.content[0].text).confirmToken;
  await rpc.answer(rpc.send('tools/call', { name: 'skill_run', arguments: { ...call, confirmToken: token } }));
  await sleep(200);
  child.stdin.end();
  assert.equal(await exited, 0);
  await new Promise((r) => (child.stderr.readableEnded ? r() : child.stderr.on('end', r)));

  const got = stderr.split('\n').filter((l) => l.startsWith(MARK)).map((l) => JSON.parse(l));
  const m = /(\d+) audit record\(s\) could not be written/.exec(stderr);
  assert.ok(m, 'the stall cost records, and the broker says how many');
  const lost = Number(m[1]);
  assert.ok(lost > 0);
  assert.equal(got.length + lost, RUNS + 1, `${got.length} records + ${lost} lost`);
  for (const r of got) assert.equal(r.SKILL_MCP_OUTCOME, 'ran');
  assert.equal(got.at(-1).SKILL_MCP_AUDIT_LOST, String(lost));
});
