// The live catalogue (docs/configuration.md, "The live catalogue"): with SKILL_MCP_WATCH on
// (the default), skills added, edited or removed while an SDK client is connected reach it
// as list_changed notifications and new lists; a burst of changes costs a bounded number
// of rescans; a confirmation issued before a change that no longer matches is refused; with
// the watch off nothing is sent and the lists stay as they were read. Real files throughout.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MARK_JS, freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, connect, serverEnv, sleep, spawnRaw } from './lib.mjs';

const sdkTypes = await import('@modelcontextprotocol/sdk/types.js');
const NOTES = {
  tools: sdkTypes.ToolListChangedNotificationSchema,
  prompts: sdkTypes.PromptListChangedNotificationSchema,
  resources: sdkTypes.ResourceListChangedNotificationSchema,
};

let base;
before(() => {
  base = freshDir('skill-mcp-live-');
});
after(() => removeDir(base));

let seq = 0;
/** A fresh root holding the skills {name: description}. */
function freshRoot(skills) {
  seq += 1;
  const root = join(base, `root${seq}`);
  mkdirSync(root, { recursive: true });
  for (const [name, description] of Object.entries(skills)) writeSkill(root, name, description);
  return root;
}
function writeSkill(root, name, description, extra = '') {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, 'SKILL.md'), skillMd(`name: ${name}\ndescription: ${description}\n${extra}`, `\n# ${name}\n`));
}

/** An SDK client that records every list_changed notification it is sent. */
async function watched(env) {
  const conn = await connect({ env });
  const seen = [];
  for (const [list, schema] of Object.entries(NOTES)) {
    conn.client.setNotificationHandler(schema, () => seen.push(list));
  }
  return { ...conn, seen };
}

async function until(what, predicate, timeoutMs = 10000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await predicate()) return;
    await sleep(50);
  }
  assert.fail(`${what}: not within ${timeoutMs} ms`);
}

const rescans = (conn) => (conn.stderr().match(/skills rescanned after a change/g) ?? []).length;
const names = async (conn) => (await callJson(conn.client, 'skill_list')).json.skills.map((s) => s.name);

describe('SKILL_MCP_WATCH on (the default)', () => {
  test('initialize advertises listChanged for tools, prompts and resources', async () => {
    const conn = await watched({ SKILLS_DIR: freshRoot({ alpha: 'First.' }) });
    try {
      const caps = conn.client.getServerCapabilities();
      for (const c of ['tools', 'prompts', 'resources']) assert.deepEqual(caps[c], { listChanged: true }, c);
    } finally {
      await conn.close();
    }
  });

  test('a skill added, edited and removed reaches the client as notifications and new lists', async () => {
    const root = freshRoot({ alpha: 'First.' });
    const conn = await watched({ SKILLS_DIR: root });
    try {
      assert.deepEqual(await names(conn), ['alpha']);
      await sleep(500); // the first watch set is made after the boot scan

      writeSkill(root, 'beta', 'Second.');
      await until('prompts/list_changed after an add', () => conn.seen.includes('prompts'));
      assert.ok(conn.seen.includes('resources'), conn.seen.join());
      assert.deepEqual((await conn.client.listPrompts()).prompts.map((p) => p.name).sort(), ['alpha', 'beta']);
      assert.deepEqual(await names(conn), ['alpha', 'beta']);

      conn.seen.length = 0;
      writeSkill(root, 'alpha', 'First, edited.');
      await until('prompts/list_changed after an edit', () => conn.seen.includes('prompts'));
      const alpha = (await conn.client.listPrompts()).prompts.find((p) => p.name === 'alpha');
      assert.equal(alpha.description, 'First, edited.');
      assert.ok(!conn.seen.includes('resources'), 'the files did not change: no resources/list_changed');

      conn.seen.length = 0;
      rmSync(join(root, 'beta'), { recursive: true });
      await until('prompts/list_changed after a removal', () => conn.seen.includes('prompts'));
      assert.deepEqual(await names(conn), ['alpha']);
      await assert.rejects(conn.client.getPrompt({ name: 'beta' }));
      assert.ok(!conn.seen.includes('tools'), 'tools/list does not depend on the skills');
    } finally {
      await conn.close();
    }
  });

  test('a burst of 1000 file changes costs a bounded number of rescans', async () => {
    const root = freshRoot({ alpha: 'First.' });
    const conn = await watched({ SKILLS_DIR: root });
    try {
      await names(conn);
      await sleep(500);
      const before = rescans(conn);
      const data = join(root, 'alpha', 'data');
      mkdirSync(data);
      const started = Date.now();
      for (let i = 0; i < 1000; i += 1) writeFileSync(join(data, `f${i}.txt`), `${i}\n`);
      const took = Date.now() - started;
      await until('the burst seen', async () => {
        const load = await callJson(conn.client, 'skill_load', { name: 'alpha' });
        return load.json.files?.length === 1001;
      });
      await sleep(1500); // anything still queued has run
      const made = rescans(conn) - before;
      // One per 2 s of burst at most, one queued behind the last, one for the directory
      // made before its files.
      const bound = Math.ceil(took / 2000) + 3;
      assert.ok(made >= 1 && made <= bound, `${made} rescans for a ${took} ms burst (bound ${bound})`);
      const settled = rescans(conn);
      await sleep(1000);
      assert.equal(rescans(conn), settled, "no rescan without a change: a scan's own reads are none");
    } finally {
      await conn.close();
    }
  });

  test('a confirmation issued before a change that no longer matches is refused', async () => {
    const root = freshRoot({});
    const host = (scripts) =>
      `mcp-host:\n  version: 1\n  run:\n${scripts.map((s) => `    - script: ${s}\n      interpreter: node\n`).join('')}`;
    writeSkill(root, 'runner', 'Runs.', host(['scripts/a.js', 'scripts/b.js']));
    mkdirSync(join(root, 'runner', 'scripts'));
    const marks = join(base, `marks${seq}`);
    mkdirSync(marks);
    chmodSync(marks, 0o1777);
    writeFileSync(join(root, 'runner', 'scripts', 'a.js'), MARK_JS);
    writeFileSync(join(root, 'runner', 'scripts', 'b.js'), MARK_JS);
    spawnSync('chmod', ['-R', 'a+rX', base]);
    const conn = await watched({ SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'off' });
    try {
      const preview = async (script) => {
        const r = await callJson(conn.client, 'skill_run', { name: 'runner', script, args: [join(marks, 'm')] });
        assert.equal(r.json?.status, 'confirmation-required', r.text);
        return r.json.confirmToken;
      };
      const tokenA = await preview('scripts/a.js');
      const tokenB = await preview('scripts/b.js');
      await sleep(500);
      // The script's bytes change: its token no longer matches.
      let count = rescans(conn);
      appendFileSync(join(root, 'runner', 'scripts', 'a.js'), '\n// edited\n');
      await until('the rescan after the edit', () => rescans(conn) > count);
      const a = await callJson(conn.client, 'skill_run', {
        name: 'runner', script: 'scripts/a.js', args: [join(marks, 'm')], confirmToken: tokenA,
      });
      assert.equal(a.json?.error, 'DRAFT_CHANGED', a.text);
      // The declaration drops b.js: the grant is decided again, and its token runs nothing.
      count = rescans(conn);
      writeSkill(root, 'runner', 'Runs.', host(['scripts/a.js']));
      await until('the rescan after the declaration change', () => rescans(conn) > count);
      const b = await callJson(conn.client, 'skill_run', {
        name: 'runner', script: 'scripts/b.js', args: [join(marks, 'm')], confirmToken: tokenB,
      });
      assert.equal(b.json?.error, 'SCRIPT_NOT_DECLARED', b.text);
      const listed = (await callJson(conn.client, 'skill_list')).json.skills[0];
      assert.deepEqual(listed.scripts.map((s) => s.script ?? s), ['scripts/a.js']);
    } finally {
      await conn.close();
    }
  });

  test('a prompt approved after its script left the declaration runs nothing', async () => {
    const root = freshRoot({});
    const host = (scripts) =>
      `mcp-host:\n  version: 1\n  run:\n${scripts.map((s) => `    - script: ${s}\n      interpreter: node\n`).join('')}`;
    writeSkill(root, 'runner', 'Runs.', host(['scripts/a.js', 'scripts/b.js']));
    mkdirSync(join(root, 'runner', 'scripts'));
    const marks = join(base, `marks${seq}`);
    mkdirSync(marks);
    chmodSync(marks, 0o1777);
    writeFileSync(join(root, 'runner', 'scripts', 'a.js'), MARK_JS);
    writeFileSync(join(root, 'runner', 'scripts', 'b.js'), MARK_JS);
    spawnSync('chmod', ['-R', 'a+rX', base]);
    let conn;
    conn = await connect({
      env: { SKILLS_DIR: root, SKILL_MCP_NAMESPACES: 'off' },
      onElicit: async () => {
        const count = rescans(conn);
        writeSkill(root, 'runner', 'Runs.', host(['scripts/a.js']));
        await until('the rescan while the prompt is open', () => rescans(conn) > count);
        return { action: 'accept', content: { approve: true } };
      },
    });
    try {
      await sleep(500);
      const mark = join(marks, 'prompted');
      const r = await callJson(conn.client, 'skill_run', { name: 'runner', script: 'scripts/b.js', args: [mark] });
      assert.equal(r.json?.error, 'DRAFT_CHANGED', r.text);
      assert.equal(existsSync(mark), false, 'nothing ran');
    } finally {
      await conn.close();
    }
  });

  test('a client that has not said initialized is sent nothing', async () => {
    const root = freshRoot({ alpha: 'First.' });
    const raw = spawnRaw({ SKILLS_DIR: root });
    try {
      const init = await raw.request({
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      });
      assert.ok(init.result);
      await sleep(500);
      writeSkill(root, 'beta', 'Second.');
      await until('the rescan', () => /skills rescanned after a change/.test(raw.stderr()));
      const pong = await raw.request({ jsonrpc: '2.0', id: 2, method: 'ping' });
      assert.deepEqual(pong, { jsonrpc: '2.0', id: 2, result: {} }, 'no notification came before the answer');
      assert.equal(raw.lines.length, 2);
    } finally {
      raw.kill();
    }
  });

  test('a 2026-07-28 connection is sent nothing; its lists are not cached', async () => {
    const root = freshRoot({ alpha: 'First.' });
    const raw = spawnRaw({ SKILLS_DIR: root });
    const meta = {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    };
    try {
      const first = await raw.request({ jsonrpc: '2.0', id: 1, method: 'prompts/list', params: meta });
      assert.equal(first.result.ttlMs, 0, JSON.stringify(first));
      raw.send({ jsonrpc: '2.0', method: 'notifications/initialized', params: meta });
      await sleep(500);
      writeSkill(root, 'beta', 'Second.');
      await until('the rescan', () => /skills rescanned after a change/.test(raw.stderr()));
      const second = await raw.request({ jsonrpc: '2.0', id: 2, method: 'prompts/list', params: meta });
      assert.equal(second.id, 2, 'no notification came before the answer');
      assert.deepEqual(second.result.prompts.map((p) => p.name).sort(), ['alpha', 'beta']);
      assert.equal(raw.lines.length, 2);
    } finally {
      raw.kill();
    }
  });
});

describe('SKILL_MCP_WATCH off', () => {
  test('no listChanged, no notification, and the lists stay as read at start', async () => {
    const root = freshRoot({ alpha: 'First.' });
    const conn = await watched({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'off' });
    try {
      const caps = conn.client.getServerCapabilities();
      for (const c of ['tools', 'prompts', 'resources']) assert.deepEqual(caps[c], {}, c);
      assert.deepEqual(await names(conn), ['alpha']);
      writeSkill(root, 'beta', 'Second.');
      await sleep(1500);
      assert.deepEqual(conn.seen, []);
      assert.deepEqual(await names(conn), ['alpha']);
      assert.equal(rescans(conn), 0);
    } finally {
      await conn.close();
    }
  });

  test('a value that is not on or off refuses to start; doctor names the watch', () => {
    const root = freshRoot({ alpha: 'First.' });
    const bad = spawnSync(BIN, [], { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'yes' }), input: '', encoding: 'utf8' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /SKILL_MCP_WATCH="yes" is not on or off/);
    for (const [value, expect] of [['', /watch: on \(inotify\)/], ['off', /watch: off \(SKILL_MCP_WATCH=off\)/]]) {
      const doc = spawnSync(BIN, ['doctor'], { env: serverEnv({ SKILLS_DIR: root, SKILL_MCP_WATCH: value }), encoding: 'utf8' });
      assert.match(doc.stdout, expect, doc.stdout);
    }
  });
});
