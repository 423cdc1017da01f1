// skill_run and its confirmation gate (docs/wire.md §4 and §6). Every case
// checks through the marker file the script appends to whether anything ran.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildRunTree, removeDir } from './fixtures.mjs';
import { assertKeyOrder, callJson, connect, sleep } from './lib.mjs';

const CONFIRM_KEYS = ['status', 'confirmed', 'dispatched', 'action', 'preview', 'confirmToken', 'expiresAt', 'ttlSeconds', 'instruction'];
const WILLRUN_KEYS = ['skill', 'interpreter', 'argv', 'cwd', 'timeoutMs', 'envNames', 'envNotSet?', 'envWarning?'];
const RECEIPT_KEYS = [
  'skill',
  'script',
  'interpreter',
  'exitCode',
  'signal',
  'stdout',
  'stderr',
  'truncated',
  'timedOut',
  'timeoutMs',
  'durationMs',
  'env',
  'networkNote?',
];
const SECRET_VALUE = 'mark-var-value-never-shown';
const SERVER_ONLY_VALUE = 'server-only-value-never-shown';

let tree;
let seq = 0;
before(() => {
  tree = buildRunTree();
});
after(() => removeDir(tree.base));

/** A fresh marker path; the script appends one line per run. */
function marker() {
  seq += 1;
  return join(tree.markers, `m${seq}`);
}
function runs(path) {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}

// The scripts leave markers in the test's tree under the host's /tmp, which a run's own
// namespaces (the default, auto) would hide: these cases run without them.
const NO_NS = { SKILL_MCP_NAMESPACES: 'off' };

/** The standalone environment the run tests use unless a test says otherwise. */
function runEnv(extra = {}) {
  return { SKILLS_DIR: tree.root, MARK_VAR: SECRET_VALUE, SERVER_ONLY: SERVER_ONLY_VALUE, ...NO_NS, ...extra };
}

function run(client, { name = 'marker', script = 'scripts/mark.js', args, confirmToken } = {}) {
  const a = { name, script };
  if (args !== undefined) a.args = args;
  if (confirmToken !== undefined) a.confirmToken = confirmToken;
  return callJson(client, 'skill_run', a);
}

/** First call: must be confirmation-required, nothing started. */
async function preview(client, opts, mark) {
  const r = await run(client, opts);
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json?.status, 'confirmation-required', r.text);
  assert.equal(typeof r.json.confirmToken, 'string');
  if (mark) assert.equal(runs(mark), 0, 'the first call starts no process');
  return r.json;
}

function assertRejected(r, error) {
  assert.equal(r.isError, true, r.text);
  assert.ok(r.json, `indented JSON: ${r.text}`);
  assertKeyOrder(r.json, ['status', 'confirmed', 'dispatched', 'error'], 'rejection');
  assert.equal(r.json.status, 'confirmation-rejected');
  assert.equal(r.json.confirmed, false);
  assert.equal(r.json.dispatched, false);
  assert.equal(r.json.error, error, r.text);
}

function assertReceipt(r) {
  assert.equal(r.isError, false, r.text);
  assertKeyOrder(r.json, RECEIPT_KEYS, 'receipt', ['exitCode', 'signal']);
  assert.deepEqual(Object.keys(r.json.truncated), ['stdout', 'stderr']);
  return r.json;
}

describe('two-step confirmation (client without elicitation, mode ask-user)', () => {
  let conn;
  before(async () => {
    conn = await connect({ env: runEnv() });
  });
  after(async () => conn?.close());

  test('the first call previews exactly what would run and starts nothing', async () => {
    const m = marker();
    const r = await run(conn.client, { args: [m, '0'] });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.text, JSON.stringify(r.json, null, 2), 'confirmation payloads are 2-space indented');
    assertKeyOrder(r.json, CONFIRM_KEYS, 'confirmation-required');
    assert.equal(r.json.status, 'confirmation-required');
    assert.equal(r.json.confirmed, false);
    assert.equal(r.json.dispatched, false);
    assert.equal(r.json.action, 'skill.run');
    assertKeyOrder(r.json.preview, ['dryRun', 'willRun', 'note'], 'preview');
    assert.equal(r.json.preview.dryRun, true);
    const w = r.json.preview.willRun;
    assertKeyOrder(w, WILLRUN_KEYS, 'willRun');
    assert.equal(w.skill, 'marker');
    assert.equal(w.interpreter, 'node');
    assert.deepEqual(w.argv, ['scripts/mark.js', m, '0']);
    assert.equal(w.cwd, tree.marker);
    assert.equal(w.timeoutMs, 5000);
    assert.deepEqual(w.envNames, [...w.envNames].sort(), 'envNames sorted');
    assert.ok(w.envNames.includes('MARK_VAR'), w.envNames.join());
    assert.ok(w.envNames.includes('PATH'), w.envNames.join());
    assert.ok(!w.envNames.includes('SERVER_ONLY'), 'never the server environment');
    assert.ok(!w.envNames.includes('MARK_UNSET'), 'an unset variable is absent');
    assert.deepEqual(w.envNotSet, ['MARK_UNSET']);
    assert.ok(JSON.stringify(w.envWarning ?? '').includes('MARK_VAR'), `standalone envWarning names MARK_VAR: ${JSON.stringify(w.envWarning)}`);
    assert.ok(!r.text.includes(SECRET_VALUE), 'names only, never values');
    assert.ok(!r.text.includes(SERVER_ONLY_VALUE));
    assert.equal(r.json.ttlSeconds, 600);
    const expires = Date.parse(r.json.expiresAt);
    assert.ok(Number.isFinite(expires), r.json.expiresAt);
    assert.ok(Math.abs(expires - (Date.now() + 600000)) < 60000, r.json.expiresAt);
    assert.match(r.json.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.equal(typeof r.json.instruction, 'string');
    assert.equal(runs(m), 0, 'nothing ran');
  });

  test('the token runs the script once; receipt shape; reuse is TOKEN_REUSED', async () => {
    const m = marker();
    const p = await preview(conn.client, { args: [m, '0'] }, m);
    const r = await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken });
    const receipt = assertReceipt(r);
    assert.equal(runs(m), 1, 'ran exactly once');
    assert.equal(receipt.skill, 'marker');
    assert.equal(receipt.script, 'scripts/mark.js');
    assert.equal(receipt.interpreter, 'node');
    assert.equal(receipt.exitCode, 0);
    assert.equal(receipt.signal, null);
    assert.equal(receipt.timedOut, false);
    assert.equal(receipt.timeoutMs, 5000);
    assert.ok(Number.isFinite(receipt.durationMs) && receipt.durationMs >= 0);
    assert.deepEqual(receipt.truncated, { stdout: false, stderr: false });
    assert.equal(receipt.stderr, 'mark.js wrote to stderr\n');
    assert.deepEqual(receipt.env, p.preview.willRun.envNames, 'receipt env = preview envNames');
    const seen = JSON.parse(receipt.stdout);
    assert.deepEqual(seen.argv, [m, '0'], 'argv passed verbatim');
    assert.equal(seen.cwd, tree.marker, 'runs in the skill directory');
    assert.deepEqual(seen.envNames, receipt.env, 'the script got exactly the listed names');
    const allowed = new Set(['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'MCP_DATA_DIR', 'HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy', 'NODE_USE_ENV_PROXY', 'MARK_VAR']);
    for (const n of seen.envNames) assert.ok(allowed.has(n), `${n} is on the allowlist or declared and granted`);
    assert.equal(seen.markVar, 'set', 'the declared variable reached the script');
    assert.ok(!r.text.includes(SERVER_ONLY_VALUE));

    const again = await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken });
    assertRejected(again, 'TOKEN_REUSED');
    assert.equal(runs(m), 1, 'a used token runs nothing');
  });

  test('arguments pass through verbatim, no shell', async () => {
    const m = marker();
    const args = [m, '0', '$(touch /tmp/pwned)', '; rm -rf /', "'quoted' \"double\"", '  spaced  ', 'ünïcode'];
    const p = await preview(conn.client, { args }, m);
    assert.deepEqual(p.preview.willRun.argv, ['scripts/mark.js', ...args]);
    const receipt = assertReceipt(await run(conn.client, { args, confirmToken: p.confirmToken }));
    assert.deepEqual(JSON.parse(receipt.stdout).argv, args);
  });

  test('a non-zero exit is a normal result, not isError', async () => {
    const m = marker();
    const p = await preview(conn.client, { args: [m, '3'] }, m);
    const r = await run(conn.client, { args: [m, '3'], confirmToken: p.confirmToken });
    const receipt = assertReceipt(r);
    assert.equal(receipt.exitCode, 3);
    assert.equal(receipt.signal, null);
    assert.ok(receipt.stdout.length > 0, 'stdout comes back');
    assert.equal(receipt.stderr, 'mark.js wrote to stderr\n');
    assert.equal(runs(m), 1);
  });

  test('DRAFT_CHANGED on changed argv; the old token stays usable', async () => {
    const m1 = marker();
    const m2 = marker();
    const p = await preview(conn.client, { args: [m1, '0'] }, m1);
    const changed = await run(conn.client, { args: [m2, '0'], confirmToken: p.confirmToken });
    assertRejected(changed, 'DRAFT_CHANGED');
    assert.equal(changed.json.reason, 'payload-changed');
    assert.deepEqual(changed.json.preview.willRun.argv, ['scripts/mark.js', m2, '0'], 'a fresh preview of the new draft');
    assert.equal(typeof changed.json.confirmToken, 'string');
    assert.notEqual(changed.json.confirmToken, p.confirmToken);
    assert.equal(runs(m1) + runs(m2), 0, 'nothing ran');

    assertReceipt(await run(conn.client, { args: [m1, '0'], confirmToken: p.confirmToken }));
    assert.equal(runs(m1), 1, 'the old token is still good for its own draft');
    assertReceipt(await run(conn.client, { args: [m2, '0'], confirmToken: changed.json.confirmToken }));
    assert.equal(runs(m2), 1, 'the fresh token runs the new draft');
  });

  test('DRAFT_CHANGED on a changed script', async () => {
    const m = marker();
    const p = await preview(conn.client, { args: [m, '0'] }, m);
    const r = await run(conn.client, { script: 'scripts/other.js', args: [m, '0'], confirmToken: p.confirmToken });
    assertRejected(r, 'DRAFT_CHANGED');
    assert.equal(runs(m), 0);
  });

  test('DRAFT_CHANGED on a changed skill', async () => {
    const m = marker();
    const p = await preview(conn.client, { args: [m, '0'] }, m);
    const r = await run(conn.client, { name: 'marker2', args: [m, '0'], confirmToken: p.confirmToken });
    assertRejected(r, 'DRAFT_CHANGED');
    assert.equal(r.json.preview.willRun.skill, 'marker2');
    assert.equal(runs(m), 0);
  });

  test('forged and padded tokens are TOKEN_INVALID and spend nothing', async () => {
    const m = marker();
    const p = await preview(conn.client, { args: [m, '0'] }, m);
    const t = p.confirmToken;
    const flipped = t.slice(0, -3) + (t.at(-3) === 'A' ? 'B' : 'A') + t.slice(-2);
    for (const forged of [
      'not-a-token',
      randomBytes(48).toString('base64url'),
      `${t}=`,
      `${t}==`,
      ` ${t}`,
      `${t}\n`,
      `${t}A`,
      flipped,
      t.toUpperCase() === t ? t.toLowerCase() : t.toUpperCase(),
      '',
    ]) {
      const r = await run(conn.client, { args: [m, '0'], confirmToken: forged });
      if (forged === '') {
        // An empty token is either a bad argument or an invalid token; never a run.
        assert.equal(r.isError, true, r.text);
      } else {
        assertRejected(r, 'TOKEN_INVALID');
      }
      assert.equal(runs(m), 0, `nothing ran for ${JSON.stringify(forged).slice(0, 40)}`);
    }
    assertReceipt(await run(conn.client, { args: [m, '0'], confirmToken: t }));
    assert.equal(runs(m), 1, 'the genuine token was not spent by the forgeries');
  });

  test('output over 1 MiB per stream is cut and flagged', async () => {
    const p = await preview(conn.client, { script: 'scripts/loud.js' });
    const receipt = assertReceipt(await run(conn.client, { script: 'scripts/loud.js', confirmToken: p.confirmToken }));
    assert.equal(receipt.exitCode, 0);
    assert.deepEqual(receipt.truncated, { stdout: true, stderr: true });
    assert.equal(receipt.stdout.length, 1024 * 1024);
    assert.equal(receipt.stderr.length, 1024 * 1024);
    assert.ok(/^o+$/.test(receipt.stdout) && /^e+$/.test(receipt.stderr), 'the captured bytes are the first ones');
  });

  test('a detached grandchild holding the pipes does not hold the call', async () => {
    const p = await preview(conn.client, { script: 'scripts/detach.js' });
    const started = Date.now();
    const receipt = assertReceipt(await run(conn.client, { script: 'scripts/detach.js', confirmToken: p.confirmToken }));
    const took = Date.now() - started;
    assert.equal(receipt.exitCode, 0, receipt.stderr);
    assert.ok(took < 5000 + 3250 + 2000, `returned in ${took} ms, not after the grandchild's 30 s`);
  });

  test('timeout: the run is stopped and the call returns', async () => {
    const m = marker();
    const p = await preview(conn.client, { script: 'scripts/slow.js', args: [m] }, m);
    assert.equal(p.preview.willRun.timeoutMs, 2000);
    const started = Date.now();
    const receipt = assertReceipt(await run(conn.client, { script: 'scripts/slow.js', args: [m], confirmToken: p.confirmToken }));
    const took = Date.now() - started;
    assert.equal(receipt.timedOut, true);
    assert.equal(receipt.exitCode, null);
    assert.equal(typeof receipt.signal, 'string');
    assert.ok(took < 2000 + 3250 + 2000, `returned in ${took} ms`);
    assert.equal(runs(m), 1, 'it did start');
  });
});

describe('the fence, before the gate', () => {
  let conn;
  before(async () => {
    conn = await connect({ env: runEnv() });
  });
  after(async () => conn?.close());

  test("a script reads neither the server's environ block nor its memory", async () => {
    const p = await preview(conn.client, { script: 'scripts/probe.js' });
    const receipt = assertReceipt(await run(conn.client, { script: 'scripts/probe.js', confirmToken: p.confirmToken }));
    assert.equal(receipt.exitCode, 0, receipt.stderr);
    const seen = JSON.parse(receipt.stdout);
    if (seen.environ !== undefined) {
      assert.ok(!seen.environ.includes(SERVER_ONLY_VALUE), 'the environ block was wiped');
      assert.ok(!seen.environ.includes(SECRET_VALUE));
    }
    assert.notEqual(seen.mem, 'opened', 'the server is not dumpable: /proc/<pid>/mem does not open');
  });

  test('an undeclared script is refused, naming the declared ones', async () => {
    const m = marker();
    const r = await run(conn.client, { script: 'scripts/undeclared.js', args: [m] });
    assert.equal(r.isError, true);
    assert.ok(r.text.includes('scripts/mark.js'), r.text);
    assert.equal(runs(m), 0);
  });

  test('a path-shaped script name never gets past the declaration lookup', async () => {
    const m = marker();
    for (const script of ['../marker2/scripts/mark.js', '/bin/sh', 'scripts/../scripts/mark.js', 'scripts\\mark.js', 'scripts/%6Dark.js']) {
      const r = await run(conn.client, { script, args: [m] });
      assert.equal(r.isError, true, script);
      assert.notEqual(r.json?.status, 'confirmation-required', script);
    }
    assert.equal(runs(m), 0);
  });

  test('a python script is refused in the words of unavailableScripts', async () => {
    const r = await run(conn.client, { script: 'scripts/tool.py' });
    assert.equal(r.isError, true);
    assert.match(r.text, /python/);
    assert.match(r.text, /node/);
  });

  test('an unknown skill is refused', async () => {
    const r = await run(conn.client, { name: 'no-such-skill', script: 'scripts/mark.js' });
    assert.equal(r.isError, true);
    assert.ok(r.text.includes('no-such-skill'));
  });

  test('argument checks: NUL, too many, too long; nothing runs', async () => {
    const m = marker();
    // The content checks (a NUL, over 8192 bytes in all) come after the gate (docs/wire.md
    // order): the preview is issued, and the confirmed call is refused.
    for (const args of [[m, 'a\u0000b'], [m, 'x'.repeat(9000)]]) {
      const r = await run(conn.client, { args });
      assert.ok(r.isError || r.json?.status === 'confirmation-required', r.text.slice(0, 200));
      assert.equal(r.isError, false, r.text.slice(0, 200));
      assert.equal(r.json.status, 'confirmation-required', r.text.slice(0, 200));
      if (!r.isError) {
        const second = await run(conn.client, { args, confirmToken: r.json.confirmToken });
        assert.equal(second.isError, true, 'refused at the latest when it would run');
        assert.equal(second.json?.error, 'INVALID_ARGUMENT', second.text);
        assert.equal(second.json?.argument, 'args', second.text);
      }
    }
    // Too many (65 > kMaxRunArgs = 64): a shape check, refused before any preview.
    const tooMany = [m, ...Array.from({ length: 64 }, (_, i) => `a${i}`)];
    assert.equal(tooMany.length, 65);
    const r = await run(conn.client, { args: tooMany });
    assert.equal(r.isError, true, r.text.slice(0, 200));
    assert.equal(r.json?.error, 'INVALID_ARGUMENT', r.text);
    assert.equal(r.json?.argument, 'args', r.text);
    assert.equal(r.json?.confirmToken, undefined, 'no token for a refused call');
    // 64 is within the limit: previewed as usual.
    const atLimit = await run(conn.client, { args: tooMany.slice(0, 64) });
    assert.equal(atLimit.json?.status, 'confirmation-required', atLimit.text.slice(0, 200));
    assert.equal(runs(m), 0);
  });
});

describe('hosting and grants decide what may run', () => {
  test('hosted without MCP_SKILL_RUN: nothing runs', async () => {
    const conn = await connect({ env: { MCP_SKILLS_PATH: tree.root, MARK_VAR: SECRET_VALUE, ...NO_NS } });
    try {
      const m = marker();
      const r = await run(conn.client, { args: [m, '0'] });
      assert.equal(r.isError, true, r.text);
      assert.equal(runs(m), 0);
    } finally {
      await conn.close();
    }
  });

  test('hosted with a grant: runs with the granted variable only, no envWarning', async () => {
    const conn = await connect({
      env: {
        ...NO_NS,
        MCP_SKILLS_PATH: tree.root,
        MARK_VAR: SECRET_VALUE,
        MCP_SKILL_RUN: JSON.stringify([{ skill: 'marker', script: 'scripts/mark.js', env: ['MARK_VAR'] }]),
      },
    });
    try {
      const m = marker();
      const p = await preview(conn.client, { args: [m, '0'] }, m);
      assert.equal(p.preview.willRun.envWarning, undefined);
      assert.ok(p.preview.willRun.envNames.includes('MARK_VAR'));
      const receipt = assertReceipt(await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken }));
      assert.equal(JSON.parse(receipt.stdout).markVar, 'set');
      assert.equal(runs(m), 1);
      const other = await run(conn.client, { script: 'scripts/other.js', args: [m, '0'] });
      assert.equal(other.isError, true, 'an ungranted script is refused');
      assert.equal(runs(m), 1);
    } finally {
      await conn.close();
    }
  });

  test('a grant without the variable: the script does not get it', async () => {
    const conn = await connect({
      env: {
        ...NO_NS,
        SKILLS_DIR: tree.root,
        MARK_VAR: SECRET_VALUE,
        MCP_SKILL_RUN: JSON.stringify([{ skill: 'marker', script: 'scripts/mark.js' }]),
      },
    });
    try {
      const m = marker();
      const p = await preview(conn.client, { args: [m, '0'] }, m);
      assert.ok(!p.preview.willRun.envNames.includes('MARK_VAR'));
      const receipt = assertReceipt(await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken }));
      assert.equal(JSON.parse(receipt.stdout).markVar, null);
    } finally {
      await conn.close();
    }
  });
});

describe('token lifetime and restarts', () => {
  test('expiry with MCP_CONFIRM_TTL_SECONDS=1: TOKEN_EXPIRED', async () => {
    const conn = await connect({ env: runEnv({ MCP_CONFIRM_TTL_SECONDS: '1' }) });
    try {
      const m = marker();
      const p = await preview(conn.client, { args: [m, '0'] }, m);
      assert.equal(p.ttlSeconds, 1);
      await sleep(2500);
      const r = await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken });
      assertRejected(r, 'TOKEN_EXPIRED');
      assert.equal(runs(m), 0);
    } finally {
      await conn.close();
    }
  });

  test('without MCP_CONFIRM_SECRET a token does not survive a restart', async () => {
    const m = marker();
    const first = await connect({ env: runEnv() });
    let token;
    try {
      token = (await preview(first.client, { args: [m, '0'] }, m)).confirmToken;
    } finally {
      await first.close();
    }
    const second = await connect({ env: runEnv() });
    try {
      assertRejected(await run(second.client, { args: [m, '0'], confirmToken: token }), 'TOKEN_INVALID');
      assert.equal(runs(m), 0);
    } finally {
      await second.close();
    }
  });

  test('with the same MCP_CONFIRM_SECRET a token survives a restart', async () => {
    const secret = randomBytes(32).toString('hex');
    const m = marker();
    // A secret needs the shared spent record (docs/wire.md §6): a state directory the broker's
    // service user owns (nobody, when the test runs as root).
    const state = join(tree.base, 'state');
    mkdirSync(state, { mode: 0o700 });
    const asRoot = process.getuid() === 0;
    if (asRoot) chownSync(state, 65534, 65534);
    const withSecret = (value) =>
      runEnv({ MCP_CONFIRM_SECRET: value, SKILL_MCP_STATE_DIR: state, ...(asRoot ? { SKILL_MCP_USER: 'nobody' } : {}) });
    const first = await connect({ env: withSecret(secret) });
    let token;
    try {
      token = (await preview(first.client, { args: [m, '0'] }, m)).confirmToken;
    } finally {
      await first.close();
    }
    const other = await connect({ env: withSecret(randomBytes(32).toString('hex')) });
    try {
      assertRejected(await run(other.client, { args: [m, '0'], confirmToken: token }), 'TOKEN_INVALID');
      assert.equal(runs(m), 0, 'another secret does not accept it');
    } finally {
      await other.close();
    }
    const second = await connect({ env: withSecret(secret) });
    try {
      assertReceipt(await run(second.client, { args: [m, '0'], confirmToken: token }));
      assert.equal(runs(m), 1);
    } finally {
      await second.close();
    }
  });
});

describe('MCP_CONFIRM_MODE', () => {
  test('auto: still two steps', async () => {
    const conn = await connect({ env: runEnv({ MCP_CONFIRM_MODE: 'auto' }) });
    try {
      const m = marker();
      const p = await preview(conn.client, { args: [m, '0'] }, m);
      assertReceipt(await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken }));
      assert.equal(runs(m), 1);
    } finally {
      await conn.close();
    }
  });

  for (const mode of ['refuse', 'yolo', 'AUTO', '']) {
    const title = mode === '' ? '"": blank counts as unset (the default preview), nothing runs'
                              : `${JSON.stringify(mode)}: refused, nothing runs`;
    test(title, async () => {
      const conn = await connect({ env: runEnv({ MCP_CONFIRM_MODE: mode }) });
      try {
        const m = marker();
        const r = await run(conn.client, { args: [m, '0'] });
        if (mode === '') {
          // A blank value counts as unset (docs/wire.md; EnvStore::IsSet), so the default
          // applies: a client without a prompt gets the preview and a token.
          assert.ok(r.json?.status === 'confirmation-required' || r.json?.reason === 'confirmation-unsupported', r.text);
          assert.equal(r.isError, false, r.text);
          assert.equal(r.json.status, 'confirmation-required', r.text);
          assert.equal(r.json.confirmed, false);
          assert.equal(r.json.dispatched, false);
          assert.equal(typeof r.json.confirmToken, 'string', r.text);
        } else {
          assertKeyOrder(r.json, ['confirmed', 'dispatched', 'action', 'reason', 'note'], 'refusal');
          assert.equal(r.json.confirmed, false);
          assert.equal(r.json.dispatched, false);
          assert.equal(r.json.action, 'skill.run');
          assert.equal(r.json.reason, 'confirmation-unsupported');
          assert.equal(r.json.confirmToken, undefined, 'no token to use');
        }
        assert.equal(runs(m), 0);
      } finally {
        await conn.close();
      }
    });
  }
});

describe('a client with the elicitation capability', () => {
  function elicitingClient(action, env = runEnv()) {
    const seen = [];
    const onElicit = async (request) => {
      seen.push(request.params);
      if (action !== 'accept') return { action };
      const content = {};
      const props = request.params.requestedSchema?.properties ?? {};
      for (const [key, schema] of Object.entries(props)) {
        if (schema.type === 'boolean') content[key] = true;
        else if (schema.enum) content[key] = schema.enum.find((v) => /^(yes|run|confirm|approve|accept|allow)/i.test(v)) ?? schema.enum[0];
        else if (schema.type === 'number' || schema.type === 'integer') content[key] = 1;
        else content[key] = 'yes';
      }
      return { action: 'accept', content };
    };
    return { seen, onElicit, env };
  }

  test('accept: the user is asked, the script runs once, no token needed', async () => {
    const e = elicitingClient('accept');
    const conn = await connect({ env: e.env, onElicit: e.onElicit });
    try {
      const m = marker();
      const r = await run(conn.client, { args: [m, '0'] });
      assert.equal(e.seen.length, 1, 'one elicitation/create');
      assert.ok(e.seen[0].message.includes('scripts/mark.js'), e.seen[0].message);
      assert.ok(!e.seen[0].message.includes(SECRET_VALUE), 'names only in the prompt');
      const receipt = assertReceipt(r);
      assert.equal(receipt.exitCode, 0);
      assert.equal(runs(m), 1);
    } finally {
      await conn.close();
    }
  });

  for (const action of ['decline', 'cancel']) {
    test(`${action}: nothing runs`, async () => {
      const e = elicitingClient(action);
      const conn = await connect({ env: e.env, onElicit: e.onElicit });
      try {
        const m = marker();
        const r = await run(conn.client, { args: [m, '0'] });
        assert.equal(e.seen.length, 1);
        assertKeyOrder(r.json, ['confirmed', 'cancelled', 'action', 'note'], action);
        assert.equal(r.json.confirmed, false);
        assert.equal(r.json.cancelled, true);
        assert.equal(r.json.action, 'skill.run');
        assert.equal(runs(m), 0);
      } finally {
        await conn.close();
      }
    });
  }

  test('accept with the approval field left false: nothing runs', async () => {
    const seen = [];
    const onElicit = async (request) => {
      seen.push(request.params);
      const content = {};
      for (const [key, schema] of Object.entries(request.params.requestedSchema?.properties ?? {})) {
        if (schema.type === 'boolean') content[key] = false;
      }
      return { action: 'accept', content };
    };
    const conn = await connect({ env: runEnv(), onElicit });
    try {
      const m = marker();
      const r = await run(conn.client, { args: [m, '0'] });
      assert.equal(seen.length, 1);
      assert.ok(Object.values(seen[0].requestedSchema?.properties ?? {}).some((p) => p.type === 'boolean'), 'the prompt asks a yes/no question');
      assert.equal(r.json?.confirmed, false, r.text);
      assert.equal(runs(m), 0);
    } finally {
      await conn.close();
    }
  });

  test('MCP_CONFIRM_ELICITATION=off: no prompt, two steps', async () => {
    const e = elicitingClient('accept', runEnv({ MCP_CONFIRM_ELICITATION: 'off' }));
    const conn = await connect({ env: e.env, onElicit: e.onElicit });
    try {
      const m = marker();
      const p = await preview(conn.client, { args: [m, '0'] }, m);
      assert.equal(e.seen.length, 0, 'never prompted');
      assertReceipt(await run(conn.client, { args: [m, '0'], confirmToken: p.confirmToken }));
      assert.equal(runs(m), 1);
    } finally {
      await conn.close();
    }
  });
});
