// Shared helpers for the integration tests: start the REAL built skill-mcp binary,
// either through the official MCP SDK client (Client + StdioClientTransport) or over
// raw stdio, and read its answers the way a client would.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '..', '..');

// The SDK is imported dynamically so a missing install reads as one clear sentence
// instead of an ERR_MODULE_NOT_FOUND stack.
if (!existsSync(join(HERE, 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'))) {
  throw new Error(
    `${join(HERE, 'node_modules')} is missing: the integration tests need the MCP SDK. ` +
      'Run `npm ci --prefix tests/integration` from the repository root, then re-run the tests.',
  );
}
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
const sdkTypes = await import('@modelcontextprotocol/sdk/types.js');
export const { ElicitRequestSchema, McpError } = sdkTypes;

function findBinary() {
  const fromEnv = process.env.SKILL_MCP_BIN;
  if (fromEnv) {
    if (!existsSync(fromEnv)) {
      throw new Error(`SKILL_MCP_BIN=${fromEnv} does not exist: build it first (ninja -C <builddir> broker/skill-mcp)`);
    }
    return fromEnv;
  }
  const guess = join(REPO, 'build', 'broker', 'skill-mcp');
  if (existsSync(guess)) return guess;
  throw new Error(
    'SKILL_MCP_BIN is not set and build/broker/skill-mcp does not exist: set SKILL_MCP_BIN to the built server ' +
      '(meson test sets it) or build the default build directory first.',
  );
}

export const BIN = findBinary();

/**
 * The server's whole environment, written out: a test states every variable the
 * server sees. (The SDK transport adds HOME, LOGNAME, PATH, SHELL, TERM and USER
 * from this process on its own; raw spawns get exactly this object.)
 */
export function serverEnv(extra = {}) {
  const env = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    LANG: 'C.UTF-8',
    // The run tests' scripts write their markers into the test's own temp tree, which
    // the Landlock allowlist refuses (docs/isolation.md); landlock.test.mjs turns it on.
    SKILL_MCP_LANDLOCK: 'off',
  };
  if (process.env.SKILL_MCP_WORKER) env.SKILL_MCP_WORKER = process.env.SKILL_MCP_WORKER;
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/**
 * Connect an SDK client to a fresh server process.
 * options: env (object for serverEnv), capabilities (client capabilities),
 * onElicit (handler for elicitation/create; implies the elicitation capability),
 * command and args (start the server through a wrapper such as setpriv; default BIN).
 */
export async function connect({ env = {}, capabilities = {}, onElicit, command = BIN, args = [] } = {}) {
  const caps = { ...capabilities };
  if (onElicit && !caps.elicitation) caps.elicitation = {};
  const client = new Client({ name: 'skill-mcp-integration', version: '0.0.1' }, { capabilities: caps });
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  const transport = new StdioClientTransport({
    command,
    args,
    env: serverEnv(env),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk.toString();
  });
  try {
    await client.connect(transport);
  } catch (err) {
    await transport.close().catch(() => {});
    throw new Error(`could not connect to ${BIN}: ${err?.message ?? err}\nserver stderr:\n${stderr}`);
  }
  return {
    client,
    transport,
    stderr: () => stderr,
    async close() {
      await client.close().catch(() => {});
    },
  };
}

/** The text of a tool result's single content block. */
export function resultText(result) {
  assert.ok(Array.isArray(result.content), 'a tool result carries a content array');
  assert.equal(result.content.length, 1, 'a tool result is exactly one content block');
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

/** Call a tool and parse its one JSON text block. */
export async function callJson(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  const text = resultText(result);
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { isError: result.isError === true, text, json, result };
}

/** setpriv's words that drop a command to uid and gid 65534 (nobody), no groups. */
export const AS_NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

/** connect()'s command and args for the broker as this user, or (asNobody) as uid 65534. */
export function launcher(asNobody) {
  return asNobody
    ? { command: AS_NOBODY[0], args: [...AS_NOBODY.slice(1), BIN] }
    : { command: BIN, args: [] };
}

/**
 * skill_run twice: the first call must ask for confirmation, the second brings its
 * token. The confirmed call's callJson result.
 */
export async function confirmedRun(client, call) {
  const first = await callJson(client, 'skill_run', call);
  assert.equal(first.json?.status, 'confirmation-required', first.text);
  return callJson(client, 'skill_run', { ...call, confirmToken: first.json.confirmToken });
}

/**
 * On a fresh connection (connect()'s options), a confirmed skill_run that must succeed
 * and exit 0; the JSON its script printed. `label` starts the failure messages.
 */
export async function runForJson(connectOptions, call, label = '') {
  const conn = await connect(connectOptions);
  try {
    const done = await confirmedRun(conn.client, call);
    const why = label ? `${label}: ${done.text}` : done.text;
    assert.equal(done.isError, false, why);
    assert.equal(done.json.exitCode, 0, why);
    return JSON.parse(done.json.stdout);
  } finally {
    await conn.close();
  }
}

/**
 * Known keys must appear in this relative order; a key ending in `?` is optional,
 * any other listed key is required. Keys the list does not name are tolerated
 * (the contract is additive) but may not break the order of the ones it names.
 */
export function assertKeyOrder(obj, spec, what = 'object', nullable = []) {
  assert.ok(obj && typeof obj === 'object' && !Array.isArray(obj), `${what} is a JSON object`);
  const names = spec.map((k) => k.replace(/\?$/, ''));
  for (const key of spec) {
    if (!key.endsWith('?')) assert.ok(Object.hasOwn(obj, key), `${what} has key "${key}" (keys: ${Object.keys(obj)})`);
  }
  const seen = Object.keys(obj).filter((k) => names.includes(k));
  const expected = names.filter((k) => Object.hasOwn(obj, k));
  assert.deepEqual(seen, expected, `${what} key order`);
  for (const [key, value] of Object.entries(obj)) {
    if (nullable.includes(key)) continue;
    assert.notEqual(value, null, `${what}.${key} is omitted rather than null`);
  }
}

/** Every problem with `reason`, as a short list for messages. */
export function problemsOf(list, reason) {
  return list.problems.filter((p) => p.reason === reason);
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Requests by id over a spawned server's stdio (several brokers at once, each its own
 * client): send(method, params) returns the id, answer(id) its answer, which may have
 * come first. Answers by id only; requests from the server are not answered.
 */
export function rpcOver(child, defaultMs = 20000) {
  let buf = '';
  let stderr = '';
  const answers = new Map();
  const waiting = new Map();
  child.stdout.on('data', (c) => {
    buf += c.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      answers.set(msg.id, msg);
      waiting.get(msg.id)?.(msg);
    }
  });
  child.stderr.on('data', (c) => { stderr += c.toString(); });
  child.stdin.on('error', () => {});
  let next = 0;
  const send = (method, params) => {
    const id = ++next;
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    return id;
  };
  const answer = (id, ms = defaultMs) => new Promise((resolve, reject) => {
    if (answers.has(id)) return resolve(answers.get(id));
    const timer = setTimeout(() => reject(new Error(`no answer to ${id}; stderr: ${stderr}`)), ms);
    waiting.set(id, (m) => { clearTimeout(timer); resolve(m); });
  });
  return { send, answer, stderr: () => stderr };
}

/**
 * A server spoken to over raw stdio, without the SDK: write lines, read lines.
 * Every stdout line is kept so a test can check that each one is JSON-RPC.
 */
export function spawnRaw(env = {}) {
  const child = spawn(BIN, [], { env: serverEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = [];
  const waiters = [];
  let buffer = Buffer.alloc(0);
  let stderr = '';
  const exited = new Promise((resolveExit) => {
    child.on('exit', (code, signal) => resolveExit({ code, signal }));
  });
  child.stdin.on('error', () => {});
  child.stderr.on('data', (c) => {
    stderr += c.toString();
  });
  child.stdout.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    let nl;
    while ((nl = buffer.indexOf(0x0a)) >= 0) {
      const line = buffer.subarray(0, nl).toString('utf8');
      buffer = buffer.subarray(nl + 1);
      lines.push(line);
      for (const w of [...waiters]) w.check();
    }
  });
  let cursor = 0;
  const raw = {
    child,
    lines,
    exited,
    stderr: () => stderr,
    /** Write one line (an object is serialised; a string or Buffer goes as is). */
    send(message) {
      const data =
        typeof message === 'string' || Buffer.isBuffer(message) ? message : JSON.stringify(message);
      child.stdin.write(data);
      child.stdin.write('\n');
    },
    /** The next stdout line (parsed) after the ones already taken. */
    next(timeoutMs = 10000) {
      return new Promise((resolveNext, reject) => {
        const w = {
          check() {
            if (cursor < lines.length) {
              waiters.splice(waiters.indexOf(w), 1);
              clearTimeout(timer);
              const line = lines[cursor++];
              try {
                resolveNext(JSON.parse(line));
              } catch {
                reject(new Error(`stdout line is not JSON: ${line.slice(0, 200)}`));
              }
            }
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no answer within ${timeoutMs} ms; stderr:\n${stderr.slice(-2000)}`));
        }, timeoutMs);
        waiters.push(w);
        w.check();
      });
    },
    /** Send a request and wait for the answer carrying its id. */
    async request(message, timeoutMs = 10000) {
      raw.send(message);
      const answer = await raw.next(timeoutMs);
      return answer;
    },
    async initialize(protocolVersion = '2025-06-18', capabilities = {}) {
      const answer = await raw.request({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion, capabilities, clientInfo: { name: 'raw-test', version: '0' } },
      });
      raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return answer;
    },
    /** Close stdin and wait for the exit. */
    async end(timeoutMs = 10000) {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    /** Every line the server wrote on stdout must be one JSON-RPC 2.0 message. */
    assertStdoutIsJsonRpc() {
      for (const line of lines) {
        let msg;
        assert.doesNotThrow(() => {
          msg = JSON.parse(line);
        }, `stdout line is JSON: ${line.slice(0, 200)}`);
        assert.equal(msg.jsonrpc, '2.0', `stdout line is JSON-RPC 2.0: ${line.slice(0, 200)}`);
      }
    },
  };
  return raw;
}

/** SKILL.md body as docs/wire.md §2 says: after the closing `---` line and its line break. */
export function bodyOf(skillMdText) {
  assert.ok(skillMdText.startsWith('---\n'));
  const close = skillMdText.indexOf('\n---', 3);
  const eol = skillMdText.indexOf('\n', close + 4);
  return eol < 0 ? '' : skillMdText.slice(eol + 1);
}

export function readText(path) {
  return readFileSync(path, 'utf8');
}
