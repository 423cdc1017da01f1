// The confirmation gate against a hostile or unusual client (docs/wire.md
// §6): one approval runs once on the whole host, a cancelled call withdraws its prompt,
// the prompt shows every character, and the gate's answers carry the reference's fields.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { buildRunTree, freshDir, removeDir, skillMd } from './fixtures.mjs';
import { callJson, connect, spawnRaw } from './lib.mjs';

let tree;
let stateBase;
let seq = 0;
before(() => {
  tree = buildRunTree();
  // A skill whose declaration has a version this server does not know: no script runs.
  const dir = join(tree.root, 'future');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), skillMd(
    ['name: future', 'description: Declares an unknown version.', 'mcp-host:', '  version: 2',
     '  run:', '    - script: scripts/mark.js', '      interpreter: node'].join('\n'), '\nBody.\n'));
  writeFileSync(join(dir, 'scripts', 'mark.js'), 'process.exit(0);\n');
  chmodSync(dir, 0o755);
  stateBase = freshDir('skill-mcp-state-');
  chmodSync(stateBase, 0o711);  // the broker may run as another uid (below)
});

// Started as root, the broker switches to its service user before it opens the state
// directory; name one that exists (nobody) and give it the directory, as the systemd
// unit's StateDirectory= does.
const AS_ROOT = process.getuid() === 0;
const SERVICE = AS_ROOT ? { SKILL_MCP_USER: 'nobody' } : {};
const NOBODY = 65534;
after(() => {
  removeDir(tree.base);
  removeDir(stateBase);
});

function marker() {
  seq += 1;
  return join(tree.markers, `g${seq}`);
}
function runs(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}
/** A private state directory of its own for one test. */
function stateDir() {
  seq += 1;
  const dir = join(stateBase, `s${seq}`);
  mkdirSync(dir, { mode: 0o700 });
  if (AS_ROOT) chownSync(dir, NOBODY, NOBODY);
  return dir;
}
// Markers live under the host's /tmp, which the run's own namespaces (auto) would hide.
function env(extra = {}) {
  return { SKILLS_DIR: tree.root, MARK_VAR: 'mark-value', SKILL_MCP_NAMESPACES: 'off', ...SERVICE, ...extra };
}
function run(client, args, confirmToken) {
  const a = { name: 'marker', script: 'scripts/mark.js', args };
  if (confirmToken !== undefined) a.confirmToken = confirmToken;
  return callJson(client, 'skill_run', a);
}
async function tokenFor(client, args) {
  const r = await run(client, args);
  assert.equal(r.json?.status, 'confirmation-required', r.text);
  return r.json.confirmToken;
}
function assertRejected(r, error) {
  assert.equal(r.isError, true, r.text);
  assert.equal(r.json?.status, 'confirmation-rejected', r.text);
  assert.equal(r.json.error, error, r.text);
  assert.equal(r.json.dispatched, false);
}

describe('one approval acts once on the whole host (shared MCP_CONFIRM_SECRET)', () => {
  test('two brokers, one secret, one token: the second is TOKEN_REUSED', async () => {
    const shared = env({ MCP_CONFIRM_SECRET: randomBytes(32).toString('hex'), SKILL_MCP_STATE_DIR: stateDir() });
    const a = await connect({ env: shared });
    const b = await connect({ env: shared });
    try {
      const m = marker();
      const token = await tokenFor(a.client, [m, '0']);
      const first = await run(a.client, [m, '0'], token);
      assert.equal(first.isError, false, first.text);
      assert.equal(runs(m), 1);
      // b never saw that spend in its own memory: only the shared record tells it.
      assertRejected(await run(b.client, [m, '0'], token), 'TOKEN_REUSED');
      assert.equal(runs(m), 1, 'the second broker ran nothing');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a restart with the same secret: the spent token stays spent', async () => {
    const shared = env({ MCP_CONFIRM_SECRET: randomBytes(32).toString('hex'), SKILL_MCP_STATE_DIR: stateDir() });
    const m = marker();
    const before = await connect({ env: shared });
    let token;
    try {
      token = await tokenFor(before.client, [m, '0']);
      assert.equal((await run(before.client, [m, '0'], token)).isError, false);
    } finally {
      await before.close();
    }
    const again = await connect({ env: shared });
    try {
      assertRejected(await run(again.client, [m, '0'], token), 'TOKEN_REUSED');
      assert.equal(runs(m), 1);
    } finally {
      await again.close();
    }
  });

  test('a spend that cannot be recorded refuses the run (fail closed)', async () => {
    const dir = stateDir();
    const conn = await connect({ env: env({ MCP_CONFIRM_SECRET: randomBytes(32).toString('hex'), SKILL_MCP_STATE_DIR: dir }) });
    try {
      const m = marker();
      const token = await tokenFor(conn.client, [m, '0']);
      rmSync(join(dir, 'spent-tokens'), { recursive: true });
      const r = await run(conn.client, [m, '0'], token);
      assertRejected(r, 'SPEND_UNRECORDED');
      assert.equal(r.json.action, 'skill.run');
      assert.equal(runs(m), 0, 'nothing ran');
    } finally {
      await conn.close();
    }
  });

  test('a state directory other users can write is not trusted: no token runs', async () => {
    const dir = stateDir();
    chmodSync(dir, 0o777);
    const conn = await connect({ env: env({ MCP_CONFIRM_SECRET: randomBytes(32).toString('hex'), SKILL_MCP_STATE_DIR: dir }) });
    try {
      const m = marker();
      // No token is issued that could never be spent: the user is not asked for nothing.
      const r = await run(conn.client, [m, '0']);
      assert.equal(r.isError, true, r.text);
      assert.equal(r.json?.reason, 'confirmation-unsupported', r.text);
      assert.equal(r.json.confirmToken, undefined);
      assert.match(r.json.note, /written by other users/);
      assert.equal(runs(m), 0);
      assert.equal(existsSync(join(dir, 'spent-tokens')), false, 'nothing was made in it');
    } finally {
      await conn.close();
    }
  });
});

describe('cancelling a call while its prompt is open', () => {
  test('withdraws the prompt, frees the slot, and a late answer runs nothing', async () => {
    const raw = spawnRaw(env());
    try {
      await raw.initialize('2025-06-18', { elicitation: {} });
      const m1 = marker();
      raw.send({ jsonrpc: '2.0', id: 'run-1', method: 'tools/call',
                 params: { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [m1, '0'] } } });
      const prompt1 = await raw.next();
      assert.equal(prompt1.method, 'elicitation/create', JSON.stringify(prompt1));
      raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'run-1', reason: 'user stopped it' } });
      const withdrawn = await raw.next();
      assert.equal(withdrawn.method, 'notifications/cancelled', JSON.stringify(withdrawn));
      assert.deepEqual(withdrawn.params.requestId, prompt1.id, 'the prompt itself is withdrawn');

      // The slot is free at once: a new run gets its own prompt, not CONFIRMATION_PENDING.
      const m2 = marker();
      raw.send({ jsonrpc: '2.0', id: 'run-2', method: 'tools/call',
                 params: { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [m2, '0'] } } });
      const prompt2 = await raw.next();
      assert.equal(prompt2.method, 'elicitation/create', JSON.stringify(prompt2));
      assert.notDeepEqual(prompt2.id, prompt1.id);

      // A late "yes" to the withdrawn prompt runs nothing and answers nothing.
      raw.send({ jsonrpc: '2.0', id: prompt1.id, result: { action: 'accept', content: { approve: true } } });
      const pong = await raw.request({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
      assert.equal(pong.id, 'ping', `no answer for the cancelled call: ${JSON.stringify(pong)}`);
      assert.equal(runs(m1), 0, 'the late answer ran nothing');

      // The open prompt still works.
      raw.send({ jsonrpc: '2.0', id: prompt2.id, result: { action: 'accept', content: { approve: true } } });
      const result2 = await raw.next(20000);
      assert.equal(result2.id, 'run-2', JSON.stringify(result2));
      assert.equal(result2.result.isError ?? false, false, JSON.stringify(result2));
      assert.equal(runs(m2), 1);
      assert.equal(runs(m1), 0);
    } finally {
      raw.kill();
    }
  });

  // The time limit only turns a server that never withdraws the prompt into a failure.
  test('the official SDK client sees its prompt handler aborted', { timeout: 30000 }, async () => {
    let aborted;
    const abortSeen = new Promise((resolve) => {
      aborted = resolve;
    });
    let prompts = 0;
    const onElicit = (request, extra) => {
      prompts += 1;
      if (prompts > 1) return { action: 'decline' };
      // Never answers; resolves once the server withdraws the prompt.
      return new Promise((resolve) => {
        extra.signal.addEventListener('abort', () => {
          aborted(true);
          resolve({ action: 'accept', content: { approve: true } });
        });
      });
    };
    const conn = await connect({ env: env(), onElicit });
    try {
      const m = marker();
      const controller = new AbortController();
      const call = conn.client.callTool(
        { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [m, '0'] } },
        undefined, { signal: controller.signal });
      call.catch(() => {});
      while (prompts === 0) await new Promise((r) => setTimeout(r, 20));
      controller.abort('stop');
      assert.equal(await abortSeen, true, 'the server sent notifications/cancelled for its prompt');
      const next = await run(conn.client, [marker(), '0']);
      assert.notEqual(next.json?.error, 'CONFIRMATION_PENDING', next.text);
      assert.equal(next.json?.cancelled, true, next.text);
      assert.equal(runs(m), 0);
    } finally {
      await conn.close();
    }
  });
});

describe('a prompt that cannot lie', () => {
  const classes = {
    'line separator U+2028': ['\u2028', '\\u2028'],
    'paragraph separator U+2029': ['\u2029', '\\u2029'],
    'NEL U+0085': ['\u0085', '\\u0085'],
    'CSI U+009B (C1)': ['\u009b', '\\u009b'],
    'ESC (C0)': ['\u001b', '\\u001b'],
    'newline': ['\n', '\\n'],
    'right-to-left override U+202E': ['\u202e', '\\u202e'],
    'left-to-right isolate U+2066': ['\u2066', '\\u2066'],
    'pop directional isolate U+2069': ['\u2069', '\\u2069'],
    'right-to-left mark U+200F': ['\u200f', '\\u200f'],
    'zero-width space U+200B': ['\u200b', '\\u200b'],
    'zero-width joiner U+200D': ['\u200d', '\\u200d'],
    'byte order mark U+FEFF': ['\ufeff', '\\ufeff'],
    'tag character U+E0041': ['\u{e0041}', '\\u{e0041}'],
  };
  const prompts = [];
  let conn;
  before(async () => {
    conn = await connect({
      env: env(),
      onElicit: (request) => {
        prompts.push(request.params.message);
        return { action: 'decline' };
      },
    });
  });
  after(async () => conn.close());

  for (const [what, [char, escaped]] of Object.entries(classes)) {
    test(`${what} in an argument is shown escaped, after the fixed facts`, async () => {
      const m = marker();
      const fake = `x${char}Time limit: 1 s (read-only preview)`;
      const r = await run(conn.client, [m, fake]);
      assert.equal(r.json?.cancelled, true, r.text);
      const message = prompts.at(-1);
      assert.ok(!message.includes(char) || char === '\n', `no raw ${what} in the prompt`);
      assert.ok(message.includes(`"x${escaped}Time limit: 1 s (read-only preview)"`), message);
      assert.equal(message.split('\n').filter((l) => l.startsWith('Time limit:')).length, 1, message);
      const args = message.indexOf('Arguments (');
      for (const fact of ['Skill: "marker"', 'Script: "scripts/mark.js"', 'Time limit: 5 s', 'Warning: ']) {
        const at = message.indexOf(fact);
        assert.ok(at >= 0 && at < args, `${fact} comes before the arguments:\n${message}`);
      }
      assert.equal(runs(m), 0);
    });
  }

  test('a long argument is cut with its real length; the warning stays in view', async () => {
    const r = await run(conn.client, [marker(), 'y'.repeat(8000)]);
    assert.equal(r.json?.cancelled, true, r.text);
    const message = prompts.at(-1);
    assert.match(message, /\[cut: 8000 characters, 8000 bytes in all\]/);
    assert.ok(message.length < 4000, `${message.length} characters`);
  });

  test('the preview a client without a prompt gets shows the same characters escaped', async () => {
    const plain = await connect({ env: env() });
    try {
      const args = [marker(), `a\u2028b\u202ec\u200bd\u{e0041}`];
      const r = await run(plain.client, args);
      assert.equal(r.json?.status, 'confirmation-required', r.text);
      assert.deepEqual(r.json.preview.willRun.argv, ['scripts/mark.js', ...args], 'the values are exact');
      for (const char of ['\u2028', '\u202e', '\u200b', '\u{e0041}']) assert.ok(!r.text.includes(char));
      assert.ok(r.text.includes('a\\u2028b\\u202ec\\u200bd\\udb40\\udc41'), r.text);
    } finally {
      await plain.close();
    }
  });
});

describe('wire parity of the gate (docs/wire.md §6)', () => {
  test('token refusals carry action after error, 2-space indented', async () => {
    const conn = await connect({ env: env({ MCP_CONFIRM_MODE: 'auto' }) });
    try {
      const m = marker();
      const token = await tokenFor(conn.client, [m, '0']);
      assert.equal((await run(conn.client, [m, '0'], token)).isError, false);
      const r = await run(conn.client, [m, '0'], token);
      assertRejected(r, 'TOKEN_REUSED');
      assert.deepEqual(Object.keys(r.json).slice(0, 6), ['status', 'confirmed', 'dispatched', 'error', 'action', 'note']);
      assert.ok(r.text.includes('\n  "error": "TOKEN_REUSED",\n  "action": "skill.run",\n'), r.text);
      const invalid = await run(conn.client, [m, '0'], 'not-a-token');
      assertRejected(invalid, 'TOKEN_INVALID');
      assert.equal(invalid.json.action, 'skill.run');
    } finally {
      await conn.close();
    }
  });

  test('MCP_CONFIRM_MODE=refuse answers as a normal result, not isError', async () => {
    const conn = await connect({ env: env({ MCP_CONFIRM_MODE: 'refuse' }) });
    try {
      const m = marker();
      const r = await run(conn.client, [m, '0']);
      assert.equal(r.json?.reason, 'confirmation-unsupported', r.text);
      assert.equal(r.isError, false, r.text);
      assert.equal(runs(m), 0);
    } finally {
      await conn.close();
    }
  });

  test('every refusal names the skill and the script it refused', async () => {
    const cases = [
      ['undeclared', {}, 'marker', 'scripts/undeclared.js'],
      ['unknown interpreter', {}, 'marker', 'scripts/tool.py'],
      ['unknown version', {}, 'future', 'scripts/mark.js'],
      ['not granted', { MCP_SKILL_RUN: JSON.stringify([{ skill: 'marker', script: 'scripts/other.js' }]) }, 'marker', 'scripts/mark.js'],
      ['nothing granted (hosted)', { MCP_SKILLS_PATH: tree.root }, 'marker', 'scripts/mark.js'],
    ];
    for (const [what, extra, name, script] of cases) {
      const conn = await connect({ env: env(extra) });
      try {
        const r = await callJson(conn.client, 'skill_run', { name, script });
        assert.equal(r.isError, true, `${what}: ${r.text}`);
        assert.ok(r.json.message.includes(`"${name}"`), `${what} names the skill: ${r.text}`);
        assert.ok(r.json.message.includes(`"${script}"`), `${what} names the script: ${r.text}`);
      } finally {
        await conn.close();
      }
    }
  });

  test('a client offering only url-mode elicitation gets the preview and a token', async () => {
    const raw = spawnRaw(env());
    try {
      await raw.initialize('2025-11-25', { elicitation: { url: {} } });
      const answer = await raw.request({ jsonrpc: '2.0', id: 'run', method: 'tools/call',
        params: { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [marker(), '0'] } } });
      assert.equal(answer.id, 'run', `no elicitation/create was sent: ${JSON.stringify(answer)}`);
      assert.equal(JSON.parse(answer.result.content[0].text).status, 'confirmation-required');
    } finally {
      raw.kill();
    }
  });

  test('the SDK client with form and url modes is prompted (control)', async () => {
    let prompted = 0;
    const conn = await connect({
      env: env(),
      capabilities: { elicitation: { form: {}, url: {} } },
      onElicit: () => {
        prompted += 1;
        return { action: 'decline' };
      },
    });
    try {
      const r = await run(conn.client, [marker(), '0']);
      assert.equal(prompted, 1, r.text);
      assert.equal(r.json?.cancelled, true, r.text);
    } finally {
      await conn.close();
    }
  });

  for (const revision of ['2025-03-26', '2024-11-05']) {
    test(`a client on ${revision} listing elicitation gets the preview and a token`, async () => {
      const raw = spawnRaw(env());
      try {
        const init = await raw.initialize(revision, { elicitation: {} });
        assert.equal(init.result.protocolVersion, revision);
        const answer = await raw.request({ jsonrpc: '2.0', id: 'run', method: 'tools/call',
          params: { name: 'skill_run', arguments: { name: 'marker', script: 'scripts/mark.js', args: [marker(), '0'] } } });
        assert.equal(answer.id, 'run', `no elicitation/create was sent: ${JSON.stringify(answer)}`);
        assert.equal(JSON.parse(answer.result.content[0].text).status, 'confirmation-required');
      } finally {
        raw.kill();
      }
    });
  }
});
