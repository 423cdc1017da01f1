// The declared network mode (docs/isolation.md, "Declared egress"; docs/configuration.md):
// a confirmed run reaches, by name, only the hosts its skill declares, narrowed by
// SKILL_MCP_EGRESS_ALLOW, and everything else fails at once. Real parts throughout: the
// built broker and its egress helper through the SDK client, an HTTPS server in this
// process on 127.0.0.1 with a certificate made here for the declared name (the helper is
// pointed at it by SKILL_MCP_EGRESS_RESOLVE), and a node script that reaches it with
// fetch, https.request and net.connect + TLS, verifying the certificate itself. Each
// refusal sits in a run whose declared connection succeeds, so a broken channel cannot
// pass for a refusal; the servers count what reached them. The broker as root and as uid
// 65534 (setpriv).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createSocket } from 'node:dgram';
import { createServer as createTcpServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { AS_NOBODY, BIN, assertKeyOrder, callJson, connect, launcher, serverEnv, sleep } from './lib.mjs';

const IS_ROOT = process.getuid() === 0;
// The declared name, a name the operator allows that no skill here declares, and a declared
// name the operator does not allow. The test certificate covers all three, so only the
// mechanism can be why one of them is not reached.
const API = 'api.example.test';
const OTHER = 'other.example.test';
const NARROWED = 'narrowed.example.test';
// Plain TCP names, pointed at the sink: one, and more hosts than the receipt lists.
const SINK = 'sink.example.test';
const MANY = Array.from({ length: 34 }, (_, i) => `h${i}.example.test`);
const LISTED = 32;
// A sanity bound for "at once", far below the script's own 8 s give-up and any resolver or
// TCP timeout: a refusal that waits for one shows up as a failure, not as a slow pass.
const FAST_MS = 2000;

// The skill's script: runs each action of the JSON list in argv[2] in order and prints one
// result per action (JSON), whatever happened. Bytes are checked both ways: the request
// body's digest comes back in a header, the response body's is compared with the pattern.
const PROBE_JS = String.raw`'use strict';
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const dgram = require('node:dgram');
const dns = require('node:dns');
const fs = require('node:fs');
const https = require('node:https');
const net = require('node:net');
const path = require('node:path');
const tls = require('node:tls');

const CA = fs.readFileSync(path.join(__dirname, '..', 'ca.pem'));
const GIVE_UP_MS = 8000;
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
const pattern = (n, fill) => Buffer.alloc(n, fill);
const codeOf = (e) => e?.cause?.code ?? e?.code ?? e?.name ?? String(e);
const checked = (a, status, header, body) => ({
  ok: status === 200 && header === sha(pattern(a.up, 'u')) && sha(body) === sha(pattern(a.down, 'd')),
  status, up: a.up, down: body.length,
});
const giveUp = (what) => Object.assign(new Error(what + ' gave up'), { code: 'TIMEOUT' });

async function viaFetch(a) {
  const res = await fetch('https://' + a.host + ':' + a.port + '/echo?down=' + a.down, {
    method: 'POST', body: pattern(a.up, 'u'), signal: AbortSignal.timeout(GIVE_UP_MS),
  });
  const body = Buffer.from(await res.arrayBuffer());
  return checked(a, res.status, res.headers.get('x-got-sha256'), body);
}

function viaHttps(a) {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: a.host, port: a.port, path: '/echo?down=' + a.down, method: 'POST', ca: CA,
      servername: a.servername, agent: false, timeout: GIVE_UP_MS,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(checked(a, res.statusCode, res.headers['x-got-sha256'], Buffer.concat(chunks))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(giveUp('https.request')));
    req.on('error', reject);
    req.end(pattern(a.up, 'u'));
  });
}

// net.connect, then TLS over that socket and HTTP/1.1 by hand.
function viaNet(a) {
  return new Promise((resolve, reject) => {
    const out = { connected: false };
    const fail = (e) => { e.connected = out.connected; reject(e); };
    const raw = net.connect({ host: a.host, port: a.port });
    raw.setTimeout(GIVE_UP_MS, () => raw.destroy(giveUp('net.connect')));
    raw.on('error', fail);
    raw.on('connect', () => {
      out.connected = true;
      out.remoteAddress = raw.remoteAddress;
      const t = tls.connect({ socket: raw, servername: a.servername ?? a.host, ca: CA });
      t.on('error', fail);
      t.on('secureConnect', () => {
        out.fingerprint = t.getPeerCertificate().fingerprint256;
        const body = pattern(a.up, 'u');
        t.write('POST /echo?down=' + a.down + ' HTTP/1.1\r\nHost: ' + a.host + '\r\nConnection: close\r\n' +
                'Content-Length: ' + body.length + '\r\n\r\n');
        t.write(body);
      });
      const chunks = [];
      t.on('data', (c) => chunks.push(c));
      t.on('end', () => {
        // Closed before the handshake: TLS's own error may come later, or never.
        if (!out.fingerprint) return fail(Object.assign(new Error('closed before TLS'), { code: 'EOF' }));
        const all = Buffer.concat(chunks);
        const split = all.indexOf('\r\n\r\n');
        const head = all.subarray(0, split).toString('latin1');
        const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
        const header = /\r\nx-got-sha256: ([0-9a-f]+)/i.exec(head)?.[1];
        resolve({ ...out, ...checked(a, status, header, all.subarray(split + 4)) });
      });
    });
  });
}

async function lookup(a) {
  const all = await dns.promises.lookup(a.host, { all: true });
  return { ok: true, addresses: all.map((x) => x.address) };
}

// a.count different names under a.domain, one after the other: how each lookup failed.
async function lookups(a) {
  const codes = {};
  for (let i = 0; i < a.count; i++) {
    const code = await dns.promises.lookup('n' + i + '.' + a.domain).then(() => 'found', codeOf);
    codes[code] = (codes[code] ?? 0) + 1;
  }
  return { ok: true, codes };
}

// One datagram; whatever comes back within 1 s is a reply. The timer, not the send's
// callback, ends it: where the socket cannot be made, only 'error' is emitted.
function udp(a) {
  return new Promise((resolve) => {
    const out = { ok: false, replied: false };
    const s = dgram.createSocket('udp4');
    s.on('message', () => { out.replied = true; });
    s.on('error', (e) => { out.code ??= codeOf(e); });
    s.send(Buffer.from('ping'), a.port, a.host, (e) => {
      out.sent = !e;
      if (e) out.code ??= codeOf(e);
    });
    setTimeout(() => { try { s.close(); } catch {} resolve(out); }, 1000);
  });
}

function raw() {
  const py = 'import errno, socket\n' +
    'try:\n  socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("opened")\n' +
    'except OSError as e:\n  print(errno.errorcode[e.errno])\n';
  const r = spawnSync('/usr/bin/python3', ['-c', py], { encoding: 'utf8' });
  return { ok: r.stdout.trim() === 'opened', code: r.stdout.trim() || r.stderr || String(r.error) };
}

function child(a) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [__filename, JSON.stringify(a.actions)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.on('error', (e) => resolve({ ok: false, code: codeOf(e) }));
    c.on('close', (code) => {
      try { resolve({ ok: code === 0, results: JSON.parse(out) }); }
      catch { resolve({ ok: false, code: 'exit ' + code, out }); }
    });
  });
}

// Plain TCP: reads the server's greeting (a.expect bytes), writes a.up bytes, then ends and
// waits for the close, or with a.hold leaves the connection open for the exit to find.
function viaTcp(a) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: a.host, port: a.port });
    s.setTimeout(GIVE_UP_MS, () => s.destroy(giveUp('tcp')));
    let got = 0;
    let sent = false;
    s.on('error', reject);
    s.on('data', (d) => {
      got += d.length;
      if (got < a.expect || sent) return;
      sent = true;
      // The callback: every byte is with the kernel, none left in node's own buffers.
      s.write(pattern(a.up, 'u'), () => {
        if (!a.hold) return s.end();
        s.setTimeout(0);
        resolve({ ok: true, got });
      });
    });
    s.on('close', () => resolve({ ok: sent && got === a.expect, got }));
  });
}

const KINDS = { fetch: viaFetch, https: viaHttps, net: viaNet, tcp: viaTcp, lookup, lookups, udp, raw, child };
(async () => {
  const results = [];
  for (const a of JSON.parse(process.argv[2])) {
    const t0 = Date.now();
    try {
      results.push({ ...(await KINDS[a.kind](a)), ms: Date.now() - t0 });
    } catch (e) {
      results.push({ ok: false, code: codeOf(e), connected: e?.connected, ms: Date.now() - t0 });
    }
  }
  process.stdout.write(JSON.stringify(results) + '\n', () => process.exit(0));
})();
`;

let base;
let caPath;
let leafFingerprint;
let api;        // the HTTPS server the declared name is pointed at
let stray;      // a TCP listener on another port of 127.0.0.1: the undeclared port
let hostAddr;   // a TCP listener on this machine's own non-loopback address, if it has one
let echoes;     // UDP echo servers on 127.0.0.1 and on that address: what a datagram would reach
let sink;       // plain TCP on 127.0.0.1: greets, reads, and closes after the client
let holder;     // the same, but it never closes: a connection to it ends only with the run

/** A certificate authority and a leaf for the three names, made with the openssl CLI. */
function makeCertificates(dir) {
  const openssl = (...args) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.error ?? ''}${r.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2',
    '-subj', '/CN=skill-mcp egress test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign');
  openssl('req', '-new', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${API}`);
  writeFileSync(join(dir, 'leaf.ext'),
    `subjectAltName=DNS:${API},DNS:${OTHER},DNS:${NARROWED}\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '2', '-out', 'leaf.pem', '-extfile', 'leaf.ext');
  return { key: readFileSync(join(dir, 'leaf.key')), cert: readFileSync(join(dir, 'leaf.pem')) };
}

const pattern = (n, fill) => Buffer.alloc(n, fill);
const sha = (b) => createHash('sha256').update(b).digest('hex');

/** What a server saw: connections, bytes each way once they closed, TLS names asked for. */
function counting(server) {
  const seen = { connections: 0, open: 0, bytesRead: 0, bytesWritten: 0, servernames: [] };
  server.on('connection', (sock) => {
    seen.connections += 1;
    seen.open += 1;
    sock.on('close', () => {
      seen.open -= 1;
      seen.bytesRead += sock.bytesRead;
      seen.bytesWritten += sock.bytesWritten;
    });
  });
  server.on('secureConnection', (t) => seen.servernames.push(t.servername));
  return seen;
}

async function listen(server, host) {
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  return server.address().port;
}

function startApi(tlsFiles) {
  // POST /echo?down=N: the request body's digest in x-got-sha256, N bytes of 'd' back.
  const server = createHttpsServer({ ...tlsFiles }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const down = Number(new URL(req.url, 'https://x').searchParams.get('down') ?? 0);
      res.writeHead(200, { 'x-got-sha256': sha(Buffer.concat(chunks)), 'content-length': down, connection: 'close' });
      res.end(pattern(down, 'd'));
    });
  });
  return { server, seen: counting(server) };
}

const GREETING = 70000;
function startSink(holds = false) {
  const sink = { sockets: new Set(), received: 0 };
  sink.server = createTcpServer({ allowHalfOpen: holds }, (sock) => {
    sink.sockets.add(sock);
    sock.on('close', () => sink.sockets.delete(sock));
    sock.on('data', (d) => { sink.received += d.length; });
    sock.on('error', () => {});
    sock.write(pattern(GREETING, 'g'));
  });
  sink.seen = counting(sink.server);
  return sink;
}

function startTcp() {
  const server = createTcpServer((sock) => sock.end('not the declared service\n'));
  return { server, seen: counting(server) };
}

async function startUdpEcho(address) {
  const socket = createSocket('udp4');
  const echo = { socket, address, got: 0 };
  socket.on('message', (msg, from) => {
    echo.got += 1;
    socket.send(msg, from.port, from.address);
  });
  await new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, address, resolve);
  });
  echo.port = socket.address().port;
  return echo;
}

before(async () => {
  base = freshDir('skill-mcp-egress-');
  const certs = join(base, 'certs');
  mkdirSync(certs);
  const tlsFiles = makeCertificates(certs);
  leafFingerprint = new X509Certificate(tlsFiles.cert).fingerprint256;
  caPath = join(certs, 'ca.pem');
  api = startApi(tlsFiles);
  api.port = await listen(api.server, '127.0.0.1');
  stray = startTcp();
  stray.port = await listen(stray.server, '127.0.0.1');
  sink = startSink();
  sink.port = await listen(sink.server, '127.0.0.1');
  holder = startSink(true);
  holder.port = await listen(holder.server, '127.0.0.1');
  // An IP literal that, from the host's network, reaches a real listener on this machine.
  const own = Object.values(networkInterfaces()).flat().find((i) => i.family === 'IPv4' && !i.internal);
  if (own) {
    hostAddr = startTcp();
    hostAddr.address = own.address;
    hostAddr.port = await listen(hostAddr.server, own.address);
  }
  echoes = [await startUdpEcho('127.0.0.1')];
  if (own) echoes.push(await startUdpEcho(own.address));
});

after(async () => {
  for (const sock of holder?.sockets ?? []) sock.destroy();
  for (const s of [api, stray, hostAddr, sink, holder]) s?.server.close();
  for (const e of echoes ?? []) e.socket.close();
  if (base) removeDir(base);
});

/** A skills root holding `skills` ({name: egress list or null}), each with the probe. */
let rootSeq = 0;
function skillsRoot(skills) {
  rootSeq += 1;
  const root = join(base, `skills${rootSeq}`);
  for (const [name, egress] of Object.entries(skills)) writeSkill(root, name, egress);
  spawnSync('chmod', ['-R', 'a+rX', base]);
  return root;
}

function writeSkill(root, name, egress) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  const lines = [
    `name: ${name}`,
    `description: Reaches what it is told to (${name}).`,
    'mcp-host:',
    '  version: 1',
    '  run:',
    '    - script: scripts/probe.js',
    '      interpreter: node',
    '      env: [NODE_EXTRA_CA_CERTS]',
    '      timeout: 60',
  ];
  if (egress) lines.push(`  egress: [${egress.join(', ')}]`);
  writeFileSync(join(dir, 'SKILL.md'), skillMd(lines.join('\n'), '\nRun scripts/probe.js.\n'));
  writeFileSync(join(dir, 'scripts', 'probe.js'), PROBE_JS);
  writeFileSync(join(dir, 'ca.pem'), readFileSync(caPath));
  chmodSync(join(dir, 'ca.pem'), 0o644);
}

/**
 * The broker's environment for the declared mode pointed at the test server. fetch trusts
 * the test CA through NODE_EXTRA_CA_CERTS, which the skill `reach` asks for: a copy of the
 * CA inside that skill, the one place of the root its run sees.
 */
function declaredEnv(root, extra = {}) {
  return {
    SKILLS_DIR: root,
    SKILL_MCP_NETWORK: 'declared',
    SKILL_MCP_EGRESS_ALLOW: `${API}:${api.port},${OTHER}:${api.port}`,
    SKILL_MCP_EGRESS_LOCAL: 'on',
    SKILL_MCP_EGRESS_RESOLVE: `${API}=127.0.0.1,${OTHER}=127.0.0.1`,
    NODE_EXTRA_CA_CERTS: join(root, 'reach', 'ca.pem'),
    // Landlock as deployed (lib.mjs turns it off for tests writing markers; these write nothing).
    SKILL_MCP_LANDLOCK: undefined,
    ...extra,
  };
}

// Actions for the probe; up and down are the body sizes each way.
const UP = 150000;
const DOWN = 300000;
const exchange = (kind, host, port, more = {}) => ({ kind, host, port, up: UP, down: DOWN, ...more });

async function withBroker(env, asNobody, fn, extra = {}) {
  const conn = await connect({ env, ...launcher(asNobody), ...extra });
  try {
    return await fn(conn.client, conn);
  } finally {
    await conn.close();
  }
}

/** Preview, then run with the token; the receipt and the probe's results. */
async function probeRun(client, name, actions) {
  const call = { name, script: 'scripts/probe.js', args: [JSON.stringify(actions)] };
  const first = await callJson(client, 'skill_run', call);
  assert.equal(first.json?.status, 'confirmation-required', first.text);
  const done = await callJson(client, 'skill_run', { ...call, confirmToken: first.json.confirmToken });
  assert.equal(done.isError, false, done.text);
  assert.equal(done.json.exitCode, 0, done.text);
  return { preview: first.json.preview, receipt: done.json, results: JSON.parse(done.json.stdout) };
}

/** A snapshot of what each server has seen, and a wait until its connections closed. */
function snapshot() {
  return Object.fromEntries([['api', api], ['stray', stray], ['hostAddr', hostAddr]]
    .filter(([, s]) => s).map(([k, s]) => [k, { ...s.seen, servernames: [...s.seen.servernames] }]));
}
async function settled(timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while ([api, stray, hostAddr, sink].some((s) => s && s.seen.open > 0) && Date.now() < end) await sleep(20);
}
const apiSince = (before) => ({
  connections: api.seen.connections - before.api.connections,
  bytesRead: api.seen.bytesRead - before.api.bytesRead,
  bytesWritten: api.seen.bytesWritten - before.api.bytesWritten,
});
const udpActions = () => echoes.map((e) => ({ kind: 'udp', host: e.address, port: e.port }));
const udpGot = () => echoes.map((e) => e.got);

const show = (x) => JSON.stringify(x);
function assertReached(r, what) {
  assert.equal(r.ok, true, `${what} reached the server with its bytes intact: ${show(r)}`);
  assert.equal(r.down, DOWN, what);
}
function assertRefusedFast(r, codes, what) {
  assert.equal(r.ok, false, `${what} is refused: ${show(r)}`);
  assert.ok(codes.includes(r.code), `${what}: ${r.code} is one of ${codes}: ${show(r)}`);
  assert.ok(r.ms < FAST_MS, `${what} failed at once (${r.ms} ms): ${show(r)}`);
}
const refusedOf = (egress, kind, target, port) =>
  egress.refused.find((x) => x.kind === kind && x.target === target && (port === undefined || x.port === port));

/** `skill-mcp doctor` under `env`, and its `network` layer with its indented lines. */
function doctorOf(env, asNobody) {
  const command = asNobody ? AS_NOBODY[0] : BIN;
  const args = asNobody ? [...AS_NOBODY.slice(1), BIN, 'doctor'] : ['doctor'];
  const doctor = spawnSync(command, args, { env: serverEnv(env), encoding: 'utf8' });
  return { doctor, layer: /^ {2}network: .*\n(?: {4}.*\n)*/m.exec(doctor.stdout)?.[0] ?? '' };
}

const modes = IS_ROOT ? [['as root', false], ['as uid 65534 (setpriv)', true]] : [['as this user', false]];

for (const [label, asNobody] of modes) {
  describe(`SKILL_MCP_NETWORK=declared, the broker ${label}`, () => {
    let root;
    before(() => {
      root = skillsRoot({ reach: [API, NARROWED], quiet: null });
    });

    test('declared is the default: doctor names the mechanism and reaches the helper', () => {
      const env = declaredEnv(root, { SKILL_MCP_NETWORK: undefined });
      const { doctor, layer } = doctorOf(env, asNobody);
      assert.match(layer, /^ {2}network: on\n {4}SKILL_MCP_NETWORK=declared: each run has a network namespace of its own/, doctor.stdout);
      assert.match(doctor.stdout, /^egress-helper: reachable$/m, doctor.stdout);
    });

    test('the declared name is reached by fetch, https.request, net.connect and a child; the receipt counts it', async () => {
      await withBroker(declaredEnv(root), asNobody, async (client) => {
        const before = snapshot();
        const { preview, receipt, results } = await probeRun(client, 'reach', [
          exchange('lookup', API),
          exchange('fetch', API, api.port),
          exchange('https', API, api.port),
          exchange('net', API, api.port),
          { kind: 'child', actions: [exchange('fetch', API, api.port), exchange('lookup', OTHER)] },
        ]);
        await settled();
        const [look, viaFetch, viaHttps, viaNet, child] = results;
        // The operator's list narrows the declaration: the declared name it leaves out is gone.
        assert.deepEqual(preview.willRun.egress, [{ host: API, ports: [api.port] }]);
        assert.equal(look.ok, true, show(look));
        assert.ok(look.addresses.length > 0 && look.addresses.every((a) => /^127\.77\./.test(a)),
          `the declared name resolves to an address inside the run, never the real one: ${show(look)}`);
        assertReached(viaFetch, 'fetch (NODE_EXTRA_CA_CERTS granted by the declaration)');
        assertReached(viaHttps, 'https.request with ca:');
        assertReached(viaNet, 'net.connect + tls.connect');
        assert.equal(viaNet.fingerprint, leafFingerprint, 'the script saw the server\'s own certificate: TLS untouched');
        assert.ok(look.addresses.includes(viaNet.remoteAddress), show(viaNet));
        assert.equal(child.ok, true, show(child));
        assertReached(child.results[0], 'a child process\'s fetch');
        assertRefusedFast(child.results[1], ['ENOTFOUND'], 'a child process resolving a name the skill does not declare');

        const seen = apiSince(before);
        assert.equal(seen.connections, 4, 'fetch, https.request, net.connect and the child each opened one connection');
        assert.ok(api.seen.servernames.slice(-4).every((n) => n === API), show(api.seen.servernames));
        // The receipt: egress is its last key; one entry for the host and port, counted.
        assert.equal(Object.keys(receipt).at(-1), 'egress', show(Object.keys(receipt)));
        assert.deepEqual(Object.keys(receipt.egress).filter((k) => k !== 'refusedOmitted'), ['hosts', 'refused']);
        assert.equal(receipt.egress.hosts.length, 1, show(receipt.egress));
        const host = receipt.egress.hosts[0];
        assert.deepEqual(Object.keys(host), ['host', 'port', 'connections', 'bytesOut', 'bytesIn']);
        assert.equal(host.host, API);
        assert.equal(host.port, api.port);
        assert.equal(host.connections, seen.connections, show(host));
        // Counted below TLS. Out: all the server read, and at most a closing alert per
        // connection more (sent after the server had closed its side, never read).
        assert.ok(host.bytesOut >= 4 * UP && host.bytesOut >= seen.bytesRead && host.bytesOut <= seen.bytesRead + 4 * 64,
          `bytesOut ${show(host)} vs ${show(seen)}`);
        assert.ok(host.bytesIn >= 4 * DOWN && host.bytesIn <= seen.bytesWritten, `bytesIn ${show(host)} vs ${show(seen)}`);
        assert.ok(refusedOf(receipt.egress, 'dns', OTHER), `the child's lookup is on the receipt: ${show(receipt.egress)}`);
      });
    });

    test('undeclared names, IP literals, an undeclared port, UDP and a raw socket fail at once, beside a declared fetch', async () => {
      await withBroker(declaredEnv(root), asNobody, async (client) => {
        const before = snapshot();
        const actions = [
          exchange('fetch', API, api.port),
          // Allowed by the operator, pointed at the server, but not declared by this skill.
          exchange('fetch', OTHER, api.port),
          exchange('lookup', OTHER),
          // Declared by the skill, but not in the operator's list.
          exchange('fetch', NARROWED, api.port),
          // The server's own address and port: the run's loopback is not the host's.
          exchange('net', '127.0.0.1', api.port, { servername: API }),
          // The declared name on a port the list does not name, where something listens.
          exchange('net', API, stray.port),
          { kind: 'raw' },
          // Datagrams to echo servers on 127.0.0.1 and on this machine's own address.
          ...udpActions(),
        ];
        if (hostAddr) actions.push(exchange('net', hostAddr.address, hostAddr.port, { servername: API }));
        const udpBefore = udpGot();
        const { receipt, results } = await probeRun(client, 'reach', actions);
        await settled();
        const [control, other, otherLookup, narrowed, loopLiteral, wrongPort, raw, udpLoop, udpOwn, ownLiteral] =
          hostAddr ? results : [...results.slice(0, 8), undefined, undefined];
        assertReached(control, 'the declared fetch in the same run');
        for (const [r, name] of [[other, OTHER], [otherLookup, OTHER], [narrowed, NARROWED]])
          assertRefusedFast(r, ['ENOTFOUND'], `${name}`);
        // 127.0.0.1 is the run's own loopback: on an allowed port the mirror's listener takes
        // the connection and drops it at once, before a byte (it is no allotted address).
        assertRefusedFast(loopLiteral, ['ECONNREFUSED', 'ECONNRESET', 'EOF'], `127.0.0.1:${api.port}`);
        assertRefusedFast(wrongPort, ['ECONNREFUSED'], `${API}:${stray.port}`);
        assert.equal(raw.code, 'EPERM', `a raw socket: ${show(raw)}`);
        for (const u of [udpLoop, udpOwn].filter(Boolean)) assert.equal(u.replied, false, `no reply to a datagram: ${show(u)}`);
        assert.deepEqual(udpGot(), udpBefore, 'no datagram reached an echo server');
        if (hostAddr) {
          assertRefusedFast(ownLiteral, ['ECONNREFUSED', 'ENETUNREACH'], `${hostAddr.address}:${hostAddr.port}`);
          assert.ok(['ECONNREFUSED', 'ENETUNREACH', undefined].includes(udpOwn.code), show(udpOwn));
        }
        const now = snapshot();
        assert.equal(now.api.connections - before.api.connections, 1, 'only the declared fetch reached the server');
        assert.equal(now.stray.connections, before.stray.connections, 'nothing reached the undeclared port');
        if (hostAddr) assert.equal(now.hostAddr.connections, before.hostAddr.connections, 'nothing reached the host address');

        const { egress } = receipt;
        assert.deepEqual(egress.hosts.map((h) => [h.host, h.port, h.connections]), [[API, api.port, 1]]);
        for (const name of [OTHER, NARROWED]) assert.ok(refusedOf(egress, 'dns', name), `${name}: ${show(egress)}`);
        assert.ok(refusedOf(egress, 'tcp', '127.0.0.1', api.port), `the loopback literal: ${show(egress)}`);
        // With a tun route the mirror sees and records packets to other addresses; without
        // one they fail with ENETUNREACH, unrecorded (docs/isolation.md).
        if (hostAddr && ownLiteral.code === 'ECONNREFUSED') {
          assert.ok(refusedOf(egress, 'tcp', hostAddr.address, hostAddr.port), show(egress));
          assert.ok(refusedOf(egress, 'udp', echoes[1].address, echoes[1].port), show(egress));
        } else {
          assert.ok(!egress.refused.some((x) => x.kind === 'udp'), show(egress));
        }
      });
    });

    test('DNS rebinding: a declared name pointed at loopback without SKILL_MCP_EGRESS_LOCAL is refused', async () => {
      const env = declaredEnv(root, { SKILL_MCP_EGRESS_LOCAL: undefined });
      await withBroker(env, asNobody, async (client) => {
        const before = snapshot();
        const { receipt, results } = await probeRun(client, 'reach', [
          exchange('lookup', API),
          exchange('fetch', API, api.port),
          exchange('net', API, api.port),
          exchange('lookup', API),
        ]);
        await settled();
        const [first, viaFetch, viaNet, second] = results;
        for (const look of [first, second]) {
          assert.equal(look.ok, true, show(look));
          assert.ok(look.addresses.every((a) => /^127\.77\./.test(a)), `still the run's own address: ${show(look)}`);
        }
        assert.deepEqual(second.addresses, first.addresses, 'the second lookup gives the same allotted address');
        for (const [r, what] of [[viaFetch, 'fetch'], [viaNet, 'net.connect']]) {
          assert.equal(r.ok, false, `${what}: ${show(r)}`);
          assert.ok(r.ms < FAST_MS, `${what} failed at once: ${show(r)}`);
        }
        assert.equal(api.seen.connections, before.api.connections, 'nothing reached 127.0.0.1');
        const refused = refusedOf(receipt.egress, 'connect', API, api.port);
        assert.ok(refused, show(receipt.egress));
        assert.ok(typeof refused.reason === 'string' && refused.reason.length > 0, `the reason is given: ${show(refused)}`);
        assert.deepEqual(receipt.egress.hosts.filter((h) => h.connections > 0), [], show(receipt.egress));
      });
    });

    test('a connection the script leaves open when it exits is on the receipt with every byte each way', async () => {
      // The script never closes it and the server never does: only the run's end can
      // report the connection (a keep-alive agent's is the same).
      const held = skillsRoot({ reach: [API], hold: [SINK] });
      const env = declaredEnv(held, {
        SKILL_MCP_EGRESS_ALLOW: `${SINK}:${holder.port}`, SKILL_MCP_EGRESS_RESOLVE: `${SINK}=127.0.0.1`,
      });
      const UP_HELD = 1 << 20;
      await withBroker(env, asNobody, async (client) => {
        const before = { connections: holder.seen.connections, received: holder.received };
        const { receipt, results } = await probeRun(client, 'hold', [
          { kind: 'tcp', host: SINK, port: holder.port, expect: GREETING, up: UP_HELD, hold: true },
        ]);
        assert.equal(results[0].ok, true, show(results[0]));
        const end = Date.now() + 5000;
        while (holder.received - before.received < UP_HELD && Date.now() < end) await sleep(20);
        for (const sock of holder.sockets) sock.destroy();
        assert.equal(holder.seen.connections - before.connections, 1);
        assert.equal(holder.received - before.received, UP_HELD, 'what the script wrote before its exit reached the host');
        assert.deepEqual(receipt.egress.hosts,
          [{ host: SINK, port: holder.port, connections: 1, bytesOut: UP_HELD, bytesIn: GREETING }], show(receipt.egress));
      });
    });

    test(`hosts past the receipt's ${LISTED} are counted together, with their connections and bytes`, async () => {
      const many = skillsRoot({ reach: [API], many: MANY });
      const env = declaredEnv(many, {
        SKILL_MCP_EGRESS_ALLOW: MANY.map((h) => `${h}:${sink.port}`).join(','),
        SKILL_MCP_EGRESS_RESOLVE: MANY.map((h) => `${h}=127.0.0.1`).join(','),
      });
      await withBroker(env, asNobody, async (client) => {
        const before = { ...sink.seen };
        const actions = MANY.map((host, i) => ({ kind: 'tcp', host, port: sink.port, expect: GREETING, up: 1000 + i }));
        actions.push({ ...actions.at(-1) }); // the last host twice
        const { receipt, results } = await probeRun(client, 'many', actions);
        for (const r of results) assert.equal(r.ok, true, show(r));
        await settled();
        assert.equal(sink.seen.connections - before.connections, MANY.length + 1, 'every connection reached the server');
        const { egress } = receipt;
        assertKeyOrder(egress, ['hosts', 'hostsOmitted', 'refused', 'refusedOmitted?'], 'egress');
        assert.deepEqual(egress.hosts.map((h) => [h.host, h.connections, h.bytesOut, h.bytesIn]),
          MANY.slice(0, LISTED).map((h, i) => [h, 1, 1000 + i, GREETING]));
        const last = 1000 + MANY.length - 1;
        assert.deepEqual(egress.hostsOmitted,
          { hosts: 2, connections: 3, bytesOut: (last - 1) + 2 * last, bytesIn: 3 * GREETING }, show(egress));
      });
    });

    test('refusals past the ones the run\'s mirror tells apart are still counted', async () => {
      // The mirror details a bounded number of different refusals; the rest is a count.
      const count = 300;
      await withBroker(declaredEnv(root), asNobody, async (client) => {
        const { receipt, results } = await probeRun(client, 'reach', [{ kind: 'lookups', domain: 'undeclared.test', count }]);
        assert.deepEqual(results[0].codes, { ENOTFOUND: count }, show(results[0]));
        const { egress } = receipt;
        assert.equal(egress.refused.length, LISTED, show(egress));
        assert.equal(egress.refused.length + egress.refusedOmitted, count, show(egress.refusedOmitted));
      });
    });

    test('a broker whose HOME is /tmp (the view covers it read-only) still gives a run its network', async () => {
      // The resolver files are staged in the run's scratch directory, never in a /tmp the
      // view may have covered.
      await withBroker(declaredEnv(root, { HOME: '/tmp' }), asNobody, async (client) => {
        const r = await probeRun(client, 'reach', [exchange('net', API, api.port, { servername: API })]);
        assert.equal(r.receipt.exitCode, 0, show(r.receipt));
        assert.equal(r.receipt.egress?.hosts?.[0]?.host, API, show(r.receipt));
      });
    });

    test('a skill that declares nothing reaches nothing, in the broker where the declared one does', async () => {
      await withBroker(declaredEnv(root), asNobody, async (client) => {
        const before = snapshot();
        const quiet = await probeRun(client, 'quiet', [
          exchange('lookup', API),
          exchange('fetch', API, api.port),
          exchange('net', '127.0.0.1', api.port, { servername: API }),
        ]);
        assert.deepEqual(quiet.preview.willRun.egress, []);
        assertRefusedFast(quiet.results[0], ['ENOTFOUND'], 'a lookup');
        assertRefusedFast(quiet.results[1], ['ENOTFOUND'], 'a fetch');
        // Nothing listens in its namespace at all: not even the mirror's ports.
        assertRefusedFast(quiet.results[2], ['ECONNREFUSED'], '127.0.0.1');
        assert.deepEqual(quiet.receipt.egress.hosts, []);
        assert.ok(refusedOf(quiet.receipt.egress, 'dns', API), show(quiet.receipt.egress));
        await settled();
        assert.equal(api.seen.connections, before.api.connections, 'nothing reached the server');
        const control = await probeRun(client, 'reach', [exchange('fetch', API, api.port)]);
        assertReached(control.results[0], 'the declaring skill, same broker');
      });
    });

    test('a wildcard over a public suffix is not in the run\'s list unless the operator names it', async () => {
      // Quoted: a plain `*` starts a YAML alias.
      const wild = skillsRoot({ wild: ['"*.github.io"', '"*.s3.amazonaws.com"', '"*.example.com"', 'pages.github.io'] });
      const previewOf = (env) => withBroker(env, asNobody, async (client) =>
        (await callJson(client, 'skill_run', { name: 'wild', script: 'scripts/probe.js', args: ['[]'] })).json);
      const unset = await previewOf(declaredEnv(wild, { SKILL_MCP_EGRESS_ALLOW: undefined }));
      assert.deepEqual(unset.preview.willRun.egress,
        [{ host: '*.example.com', ports: [80, 443] }, { host: 'pages.github.io', ports: [80, 443] }], show(unset));
      // The listing still shows what the skill declares (the reference's field).
      await withBroker(declaredEnv(wild, { SKILL_MCP_EGRESS_ALLOW: undefined }), asNobody, async (client) => {
        const list = await callJson(client, 'skill_list', {});
        assert.deepEqual(list.json.skills[0].declaredEgress,
          ['*.github.io', '*.s3.amazonaws.com', '*.example.com', 'pages.github.io'], show(list.json));
      });
      // Control: the operator's own pattern for the wildcard keeps it.
      const named = await previewOf(declaredEnv(wild, { SKILL_MCP_EGRESS_ALLOW: '*.github.io, *.example.com' }));
      assert.deepEqual(named.preview.willRun.egress,
        [{ host: '*.github.io', ports: [80, 443] }, { host: '*.example.com', ports: [80, 443] },
         { host: 'pages.github.io', ports: [80, 443] }], show(named));
    });

    test('a wildcard reaches no name under a public suffix below it: *.amazonaws.com is not anyone\'s bucket', async () => {
      const wild = skillsRoot({ buckets: ['"*.amazonaws.com"'] });
      const OWN = 'api.amazonaws.com', BUCKET = 'bucket.s3.amazonaws.com';
      const env = (allow) => declaredEnv(wild, {
        SKILL_MCP_EGRESS_ALLOW: allow,
        SKILL_MCP_EGRESS_RESOLVE: `${OWN}=127.0.0.1,${BUCKET}=127.0.0.1`,
        NODE_EXTRA_CA_CERTS: join(wild, 'buckets', 'ca.pem'),
      });
      // Unnarrowed, the wildcard keeps ports 443 and 80, where nothing listens on
      // 127.0.0.1: amazonaws.com's own name gets as far as the helper's connect, the bucket
      // is refused by the broker before the helper is asked.
      await withBroker(env(undefined), asNobody, async (client) => {
        const before = snapshot();
        const { preview, receipt, results } = await probeRun(client, 'buckets',
          [exchange('net', OWN, 443, { servername: API }), exchange('net', BUCKET, 443, { servername: API })]);
        await settled();
        assert.deepEqual(preview.willRun.egress, [{ host: '*.amazonaws.com', ports: [80, 443] }], show(preview));
        for (const [r, name] of [[results[0], OWN], [results[1], BUCKET]])
          assertRefusedFast(r, ['ECONNREFUSED', 'ECONNRESET', 'EOF'], name);
        assert.equal(snapshot().api.connections, before.api.connections, show(receipt.egress));
        assert.ok(refusedOf(receipt.egress, 'connect', OWN, 443), `the control passed the rules: ${show(receipt.egress)}`);
        assert.ok(!refusedOf(receipt.egress, 'policy', OWN), show(receipt.egress));
        const refusal = refusedOf(receipt.egress, 'policy', BUCKET, 443);
        assert.match(refusal?.reason ?? '', /under s3\.amazonaws\.com/, show(receipt.egress));
        assert.ok(!refusedOf(receipt.egress, 'connect', BUCKET), show(receipt.egress));
      });
      // Control: the operator's pattern for that very wildcard reaches the bucket too.
      await withBroker(env(`*.amazonaws.com:${api.port}`), asNobody, async (client) => {
        const { results } = await probeRun(client, 'buckets', [exchange('net', BUCKET, api.port, { servername: API })]);
        assertReached(results[0], `${BUCKET} under the operator's own *.amazonaws.com`);
      });
    });

    test('the preview: default ports, an empty list, the prompt, and no egress key in the other modes', async () => {
      const previewOf = async (env, name = 'reach', extra = {}) => withBroker(env, asNobody, async (client) => {
        const r = await callJson(client, 'skill_run', { name, script: 'scripts/probe.js', args: ['[]'] });
        return r.json;
      }, extra);
      const unset = await previewOf(declaredEnv(root, { SKILL_MCP_EGRESS_ALLOW: undefined }));
      assert.deepEqual(unset.preview.willRun.egress, [{ host: API, ports: [80, 443] }, { host: NARROWED, ports: [80, 443] }]);
      assertKeyOrder(unset.preview.willRun,
        ['skill', 'interpreter', 'argv', 'cwd', 'timeoutMs', 'envNames', 'envNotSet?', 'envWarning?', 'egress'], 'willRun');
      const blank = await previewOf(declaredEnv(root, { SKILL_MCP_EGRESS_ALLOW: '' }));
      assert.deepEqual(blank.preview.willRun.egress, unset.preview.willRun.egress, 'blank is unset');
      const none = await previewOf(declaredEnv(root, { SKILL_MCP_EGRESS_ALLOW: 'none' }));
      assert.deepEqual(none.preview.willRun.egress, []);
      const noneRun = await withBroker(declaredEnv(root, { SKILL_MCP_EGRESS_ALLOW: 'none' }), asNobody,
        (client) => probeRun(client, 'reach', [exchange('fetch', API, api.port)]));
      assertRefusedFast(noneRun.results[0], ['ENOTFOUND'], 'a declared name the operator allows none of');
      for (const mode of ['on', 'off']) {
        const other = await previewOf(declaredEnv(root, { SKILL_MCP_NETWORK: mode }));
        assert.equal(Object.hasOwn(other.preview.willRun, 'egress'), false, `${mode}: ${show(other.preview)}`);
      }
      // The elicitation prompt names what the run may reach.
      let message = '';
      await withBroker(declaredEnv(root), asNobody, async (client) => {
        await callJson(client, 'skill_run', { name: 'reach', script: 'scripts/probe.js', args: ['[]'] });
      }, { onElicit: async (req) => { message = req.params.message; return { action: 'decline' }; } });
      assert.ok(message.includes(`${API}`) && message.includes(String(api.port)), message);
      assert.ok(!message.includes(NARROWED), message);
    });

    test('SKILL_MCP_NETWORK=off refuses the socket at once; =on reaches 127.0.0.1 directly', async () => {
      // IP literals only: under on, a name would go to the host's own resolver.
      const actions = [exchange('net', '127.0.0.1', api.port, { servername: API }), exchange('fetch', '127.0.0.1', api.port),
        ...udpActions()];
      let before = snapshot();
      let udpBefore = udpGot();
      const off = await withBroker(declaredEnv(root, { SKILL_MCP_NETWORK: 'off' }), asNobody,
        (client) => probeRun(client, 'reach', actions));
      assertRefusedFast(off.results[0], ['EPERM', 'EACCES'], 'net.connect under off');
      assertRefusedFast(off.results[1], ['EPERM', 'EACCES'], 'fetch under off');
      for (const u of off.results.slice(2)) assert.equal(u.replied, false, show(u));
      assert.deepEqual(udpGot(), udpBefore);
      assert.equal(Object.hasOwn(off.receipt, 'egress'), false, show(off.receipt));
      await settled();
      assert.equal(api.seen.connections, before.api.connections, 'nothing reached the server under off');

      before = snapshot();
      udpBefore = udpGot();
      const on = await withBroker(declaredEnv(root, { SKILL_MCP_NETWORK: 'on' }), asNobody,
        (client) => probeRun(client, 'reach', actions));
      assertReached(on.results[0], 'net.connect to 127.0.0.1 under on');
      assert.equal(on.results[0].fingerprint, leafFingerprint);
      // The certificate names no address: fetch to the literal gets as far as TLS.
      assert.equal(on.results[1].code, 'ERR_TLS_CERT_ALTNAME_INVALID', show(on.results[1]));
      for (const u of on.results.slice(2)) assert.equal(u.replied, true, `the echo answers under on: ${show(u)}`);
      assert.deepEqual(udpGot(), udpBefore.map((n) => n + 1));
      assert.equal(Object.hasOwn(on.receipt, 'egress'), false, show(on.receipt));
      await settled();
      assert.equal(api.seen.connections - before.api.connections, 2, 'the host network, as is');
    });

    test('without the run namespaces, declared falls back to off (doctor says why), never to on', async () => {
      const env = declaredEnv(root, { SKILL_MCP_NAMESPACES: 'off' });
      // The layer is on (the off fence holds); its text names the fallback and why.
      const { doctor, layer } = doctorOf(env, asNobody);
      assert.match(layer, /^ {2}network: on\n/, doctor.stdout + doctor.stderr);
      assert.match(layer, /SKILL_MCP_NETWORK=declared falls back to off, because runs get no namespaces/, layer);
      assert.match(layer, /seccomp refuses it with EPERM/, layer);
      const before = snapshot();
      await withBroker(env, asNobody, async (client) => {
        const r = await probeRun(client, 'reach', [exchange('net', '127.0.0.1', api.port, { servername: API })]);
        assertRefusedFast(r.results[0], ['EPERM', 'EACCES'], 'net.connect with the mode fallen back to off');
        assert.equal(Object.hasOwn(r.receipt, 'egress'), false, show(r.receipt));
      });
      await settled();
      assert.equal(api.seen.connections, before.api.connections);
    });

    test('the boot line says declared fell back to off and why', async () => {
      await withBroker(declaredEnv(root, { SKILL_MCP_NAMESPACES: 'off' }), asNobody, async (client, conn) => {
        // A preview waits for the probe, after which the line is written.
        await callJson(client, 'skill_run', { name: 'quiet', script: 'scripts/probe.js', args: ['[]'] });
        // stderr is its own pipe: the line written before the answer may be read after it.
        const line = /network: SKILL_MCP_NETWORK=declared falls back to off: runs get no namespaces/;
        for (let i = 0; i < 100 && !line.test(conn.stderr()); i++) await sleep(20);
        assert.match(conn.stderr(), line, conn.stderr());
      });
    });

    test('a host that refuses a run its own network namespace: declared falls back to off, the namespaces stay on', async (t) => {
      const denied = process.env.SKILL_MCP_TEST_UNSHARE_DENIED;
      assert.ok(denied, 'SKILL_MCP_TEST_UNSHARE_DENIED names the wrapper (meson sets it)');
      const launch = asNobody ? [...AS_NOBODY, BIN] : [BIN];
      const env = declaredEnv(root);
      const doctor = spawnSync(denied, ['--net', ...launch, 'doctor'], { env: serverEnv(env), encoding: 'utf8' });
      if (!/run-namespaces: on/.test(doctor.stdout)) return t.skip(`the run namespaces are off here:\n${doctor.stdout}`);
      assert.match(doctor.stdout, /network: on\n\s+SKILL_MCP_NETWORK=declared falls back to off, because the run-as user cannot give a run a network namespace of its own here \(.*Operation not permitted; under systemd, RestrictNamespaces= needs net/,
                   doctor.stdout);
      // The control: without the wrapper the same broker settles on declared.
      assert.match(doctorOf(env, asNobody).layer, /SKILL_MCP_NETWORK=declared: each run has a network namespace/);
      const before = snapshot();
      await withBroker(env, false, async (client) => {
        const r = await probeRun(client, 'reach', [exchange('net', '127.0.0.1', api.port, { servername: API })]);
        assertRefusedFast(r.results[0], ['EPERM', 'EACCES'], 'net.connect where the run cannot have its own network');
        assert.equal(Object.hasOwn(r.receipt, 'egress'), false, show(r.receipt));
      }, { command: denied, args: ['--net', ...launch] });
      await settled();
      assert.equal(api.seen.connections, before.api.connections);
    });

    test('a declaration changed between preview and confirmation is DRAFT_CHANGED', async () => {
      const liveRoot = skillsRoot({ reach: [API] });
      await withBroker(declaredEnv(liveRoot, { SKILL_MCP_WATCH: 'on' }), asNobody, async (client, conn) => {
        const call = { name: 'reach', script: 'scripts/probe.js', args: [JSON.stringify([exchange('fetch', API, api.port)])] };
        const first = await callJson(client, 'skill_run', call);
        assert.equal(first.json?.status, 'confirmation-required', first.text);
        assert.deepEqual(first.json.preview.willRun.egress, [{ host: API, ports: [api.port] }]);
        await sleep(500); // the first watch set is made after the boot scan
        const rescans = () => (conn.stderr().match(/skills rescanned after a change/g) ?? []).length;
        const count = rescans();
        writeSkill(liveRoot, 'reach', [API, OTHER]);
        const end = Date.now() + 10000;
        while (rescans() === count && Date.now() < end) await sleep(50);
        assert.ok(rescans() > count, 'the edit was rescanned');
        const before = snapshot();
        const stale = await callJson(client, 'skill_run', { ...call, confirmToken: first.json.confirmToken });
        assert.equal(stale.json?.error, 'DRAFT_CHANGED', stale.text);
        await settled();
        assert.equal(api.seen.connections, before.api.connections, 'nothing ran');
        // The control: a fresh preview shows the new list and its token runs.
        const fresh = await probeRun(client, 'reach', [exchange('fetch', API, api.port)]);
        assert.deepEqual(fresh.preview.willRun.egress, [{ host: API, ports: [api.port] }, { host: OTHER, ports: [api.port] }]);
        assertReached(fresh.results[0], 'the re-previewed run');
      });
    });
  });
}
