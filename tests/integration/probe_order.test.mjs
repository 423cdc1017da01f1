// serve probes the run namespaces after start, so the first answer does not wait for
// the probe (docs/architecture.md, "Start"). A skill_run that arrives before the probe has
// decided must wait for it and then get exactly the layers `doctor` reports: never a
// refusal for "not decided yet", never a run with a layer assumed. The run here is sent
// in the same write as `initialize`, with a token a first broker signed (the same
// MCP_CONFIRM_SECRET), so it reaches the broker before its probe can have finished.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, connect, serverEnv } from './lib.mjs';

// What the run sees of its namespaces: its uid map (only its own uid, onto itself, in
// its own user namespace) and its pid (1 or 2 under a fresh /proc of its pid namespace).
const SEE_JS = `'use strict';
const fs = require('node:fs');
console.log(JSON.stringify({
  uid: process.getuid(),
  uidMap: fs.readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\\s+/),
  pid: process.pid,
}));
`;

let root;
let state;
before(() => {
  root = freshDir('skill-mcp-probe-order-');
  const dir = join(root, 'see');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    'name: see\ndescription: Shows its namespaces.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/see.js\n      interpreter: node\n', '\n# See\n'));
  writeFileSync(join(dir, 'scripts', 'see.js'), SEE_JS);
  // A secret needs the shared spent record: a state directory the service user owns.
  state = join(root, 'state');
  mkdirSync(state, { mode: 0o700 });
  if (process.getuid() === 0) chownSync(state, 65534, 65534);
});
after(() => removeDir(root));

const asRoot = () => process.getuid() === 0;

function envFor(extra, secret) {
  return serverEnv({
    SKILLS_DIR: root,
    MCP_CONFIRM_MODE: 'auto',
    MCP_CONFIRM_SECRET: secret,
    SKILL_MCP_STATE_DIR: state,
    ...(asRoot() ? { SKILL_MCP_USER: 'nobody' } : {}),
    ...extra,
  });
}

// The doctor report as { layer: 'on' | 'off' } for the two namespace layers.
function doctorLayers(command, args, env) {
  const r = spawnSync(command, [...args, 'doctor'], { env, encoding: 'utf8' });
  const layer = (name) => new RegExp(`^  ${name}: (on|off)`, 'm').exec(r.stdout)?.[1];
  return { ns: layer('run-namespaces'), freshProc: layer('fresh-proc'), text: r.stdout + r.stderr };
}

// A token for the run, from a first broker with the same secret, started the same way (a
// broker whose runs get another network mode would preview another run).
async function signedToken(extra, secret, command, args) {
  const conn = await connect({ env: envFor(extra, secret), command, args });
  try {
    const first = await callJson(conn.client, 'skill_run', { name: 'see', script: 'scripts/see.js' });
    assert.equal(first.json?.status, 'confirmation-required', first.text);
    return first.json.confirmToken;
  } finally {
    await conn.close();
  }
}

// initialize and the confirmed skill_run in one write (input stays open until all is
// answered: a client that leaves takes its run with it); the run's answer.
async function pipelinedRun(command, args, env, token) {
  const lines = [
    { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'skill_run', arguments: { name: 'see', script: 'scripts/see.js', confirmToken: token } } },
    { jsonrpc: '2.0', id: 3, method: 'ping' },
  ].map((m) => JSON.stringify(m)).join('\n') + '\n';
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const answers = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer in 60 s\n${out}${err}`)), 60000);
    child.stdout.on('data', (d) => {
      out += d;
      const got = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      if (got.length >= 3) {
        clearTimeout(timer);
        resolve(got);
      }
    });
    child.stdin.write(lines);
  });
  child.stdin.end();
  await new Promise((resolve) => child.on('exit', resolve));
  assert.deepEqual(answers.map((m) => m.id).sort(), [1, 2, 3], `every request answered\n${out}${err}`);
  return answers.find((m) => m.id === 2);
}

async function checkRunGetsProbedLayers(t, extra, wrapper = []) {
  const command = wrapper.length ? wrapper[0] : BIN;
  const args = wrapper.length ? [...wrapper.slice(1), BIN] : [];
  const secret = randomBytes(32).toString('hex');
  const env = envFor(extra, secret);
  const doctor = doctorLayers(command, args, env);
  assert.ok(doctor.ns, doctor.text);
  if (extra.SKILL_MCP_NAMESPACES === 'on' && doctor.ns === 'off')
    return t.skip(`this host refuses the run namespaces:\n${doctor.text}`);
  const token = await signedToken(extra, secret, command, args);
  const answer = await pipelinedRun(command, args, env, token);
  const text = answer.result?.content?.[0]?.text ?? JSON.stringify(answer);
  assert.notEqual(answer.result.isError, true, text);
  const receipt = JSON.parse(text);
  assert.equal(receipt.exitCode, 0, text);
  const seen = JSON.parse(receipt.stdout);
  const uid = String(seen.uid);
  const namespaced = seen.uidMap.join(' ') === `${uid} ${uid} 1`;
  assert.equal(namespaced, doctor.ns === 'on',
               `run-namespaces is ${doctor.ns} in doctor; the run's uid map: ${seen.uidMap}`);
  if (doctor.ns === 'on') {
    assert.equal(seen.pid <= 2, doctor.freshProc === 'on',
                 `fresh-proc is ${doctor.freshProc} in doctor; the run's pid: ${seen.pid}`);
  }
}

describe('a skill_run sent with initialize waits for the namespace probe', () => {
  test('SKILL_MCP_NAMESPACES=auto: the run gets the layers doctor reports', async (t) => {
    await checkRunGetsProbedLayers(t, { SKILL_MCP_NAMESPACES: 'auto' });
  });

  test('SKILL_MCP_NAMESPACES=on: the run is namespaced, not refused as undecided', async (t) => {
    await checkRunGetsProbedLayers(t, { SKILL_MCP_NAMESPACES: 'on' });
  });

  test('auto where unshare is refused: the run goes on without namespaces', async (t) => {
    const denied = process.env.SKILL_MCP_TEST_UNSHARE_DENIED;
    assert.ok(denied, 'SKILL_MCP_TEST_UNSHARE_DENIED names the wrapper (meson sets it)');
    await checkRunGetsProbedLayers(t, { SKILL_MCP_NAMESPACES: 'auto' }, [denied]);
  });
});
