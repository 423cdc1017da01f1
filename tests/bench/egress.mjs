// The declared network mode's cost (`meson test -C build --benchmark egress`, or
// `node tests/bench/egress.mjs BROKER BENCH_RELAY`): a confirmed run's connections through
// the run's mirror, the broker and the egress helper, against the same script's direct
// connections under SKILL_MCP_NETWORK=on (the floor: the same node, the same server, no hop), and
// through bench_relay, the least a relay can do (SKILL_MCP_NETWORK=on, the script connects
// to a splice relay outside the sandbox: one more loopback hop and one more process, no
// checks), which is the floor for any design that stands a process between the script and
// its server. Prints figures and their floors from one sitting; asserts nothing.
//
//   setup       connect, one byte written and its echo read, N times in a row, per
//               connection: what a request to a new host waits for before its first answer
//   throughput  100 MB sent by the server and read to its end by the script, MB/s
//   over a link the same 100 MB from a server across a link of a known rate (root only):
//               a veth pair into a network namespace the bench makes (10.254.203.0/30),
//               its far end's egress held to each rate of BENCH_LINKS by tbf
//
// Egress is traffic to another host. On loopback the three paths share this machine's
// CPUs with the server and the client, so the loopback figure is what a relay costs in
// CPU, not what a script sees from a remote host; the link rows are that, up to the
// fastest link whose pace the machine can keep (the throughput target applies there).
// Both servers are node child processes (the same code); the declared names are pinned to
// them (SKILL_MCP_EGRESS_RESOLVE, SKILL_MCP_EGRESS_LOCAL=on).
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const bin = process.argv[2];
const relayBin = process.argv[3];
if (bin) process.env.SKILL_MCP_BIN = bin;
if (!relayBin) { console.error('usage: egress.mjs PATH/TO/skill-mcp PATH/TO/bench_relay'); process.exit(2); }
const { connect, confirmedRun } = await import(path.join(HERE, '..', 'integration', 'lib.mjs'));

const N = Number(process.env.BENCH_N || 200);
const MB = Number(process.env.BENCH_MB || 100);
const REPEAT = Number(process.env.BENCH_REPEAT || 15);
const NAME = 'bench.egress.test';
const FAR = 'far.bench.egress.test';
const LINKS = (process.env.BENCH_LINKS ?? '1gbit,2500mbit,5gbit,10gbit').split(',').filter(Boolean);
const LINK_REPEAT = Number(process.env.BENCH_LINK_REPEAT || 5);
const FAR_ADDRESS = '10.254.203.2';

const SCRIPT = `'use strict';
const net = require('net');
const [mode, host, port, n] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const { performance } = require('perf_hooks');
function once() {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const s = net.connect(port, host, () => s.write('x'));
    s.once('data', () => { const ms = performance.now() - t0; s.destroy(); resolve(ms); });
    s.on('error', reject);
  });
}
function bulk() {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let bytes = 0;
    const s = net.connect(port, host, () => s.write('b'));
    s.on('data', (d) => { bytes += d.length; });
    s.on('end', () => resolve({ bytes, ms: performance.now() - t0 }));
    s.on('error', reject);
  });
}
(async () => {
  if (mode === 'setup') {
    const ms = [];
    for (let i = 0; i < n; i++) ms.push(await once());
    console.log(JSON.stringify({ ms }));
  } else {
    const runs = [];
    for (let i = 0; i < n; i++) runs.push(await bulk());
    console.log(JSON.stringify({ runs }));
  }
})().catch((e) => { console.log(JSON.stringify({ error: e.code || String(e) })); process.exit(1); });
`;

// The server at the far end of a link: sends MB MiB on "b", echoes anything else.
const SERVER = `'use strict';
const net = require('net');
const [address, mb] = [process.argv[1], Number(process.argv[2])];
const chunk = Buffer.alloc(1 << 20, 0x61);
const server = net.createServer((sock) => {
  sock.once('data', (d) => {
    if (String(d) !== 'b') return sock.end(d);
    let left = mb;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!sock.write(chunk)) return sock.once('drain', pump);
      }
      sock.end();
    };
    pump();
  });
  sock.on('error', () => {});
});
server.listen(0, address, () => console.log(server.address().port));
`;

// A link of a known rate: a veth pair into a network namespace of the bench's own, with
// tbf on the far end's egress (the direction the 100 MB go). { skip } says why not.
function openLink() {
  if (!LINKS.length) return { skip: 'BENCH_LINKS is empty' };
  if (process.getuid() !== 0) return { skip: 'not root: a network namespace and a veth pair need CAP_NET_ADMIN' };
  const ns = `skm-bench-${process.pid}`;
  const near = `skmb${process.pid % 100000}n`, far = `skmb${process.pid % 100000}f`;
  const run = (cmd, ...args) => execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const close = () => {
    for (const args of [['netns', 'del', ns], ['link', 'del', near]]) try { run('ip', ...args); } catch { /* gone */ }
  };
  const shape = (rate) => run('tc', '-n', ns, 'qdisc', 'replace', 'dev', far, 'root', 'tbf', 'rate', rate, 'burst', '4mb', 'latency', '20ms');
  try {
    run('ip', 'netns', 'add', ns);
    run('ip', 'link', 'add', near, 'type', 'veth', 'peer', 'name', far);
    run('ip', 'link', 'set', far, 'netns', ns);
    run('ip', 'addr', 'add', '10.254.203.1/30', 'dev', near);
    run('ip', 'link', 'set', near, 'up');
    run('ip', '-n', ns, 'addr', 'add', `${FAR_ADDRESS}/30`, 'dev', far);
    run('ip', '-n', ns, 'link', 'set', far, 'up');
    shape(LINKS[0]);
  } catch (e) {
    close();
    return { skip: `cannot make the link: ${String(e.stderr || e.message).trim()}` };
  }
  return { ns, close, shape };
}

// A child's first line on stdout (a port), or its exit as an error.
function firstLine(child, what) {
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(String(d).trim()));
    child.once('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const children = [];
  const started = (cmd, args, what) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    return firstLine(child, what).then(Number);
  };
  const link = openLink();
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-bench-egress-'));
  const conns = {};
  try {
    const port = await started(process.execPath, ['-e', SERVER, '127.0.0.1', String(MB)], 'the server');
    const relayPort = await started(relayBin, [String(port)], 'bench_relay');
    let farPort, farRelayPort;
    if (!link.skip) {
      farPort = await started('ip', ['netns', 'exec', link.ns, process.execPath, '-e', SERVER, FAR_ADDRESS, String(MB)], 'the far server');
      farRelayPort = await started(relayBin, [String(farPort), FAR_ADDRESS], 'bench_relay to the far end');
    }
    fs.chmodSync(base, 0o755);
    const dir = path.join(base, 'skills', 'net');
    fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'SKILL.md'), [
      '---', 'name: net', 'description: Connects to the bench server.', 'mcp-host:', '  version: 1',
      '  run:', '    - script: scripts/net.js', '      interpreter: node', '      timeout: 300',
      `  egress: [${NAME}, ${FAR}]`, '---', '', 'Bench.', ''].join('\n'));
    fs.writeFileSync(path.join(dir, 'scripts', 'net.js'), SCRIPT);
    const common = {
      SKILLS_DIR: path.join(base, 'skills'), MCP_CONFIRM_MODE: 'auto', SKILL_MCP_LANDLOCK: 'auto',
      SKILL_MCP_EGRESS_ALLOW: `${NAME}:${port}` + (link.skip ? '' : `, ${FAR}:${farPort}`),
      SKILL_MCP_EGRESS_LOCAL: 'on',
      SKILL_MCP_EGRESS_RESOLVE: `${NAME}=127.0.0.1` + (link.skip ? '' : `, ${FAR}=${FAR_ADDRESS}`),
    };
    const envs = { declared: {}, direct: { SKILL_MCP_NETWORK: 'on' }, relay: { SKILL_MCP_NETWORK: 'on' } };
    const loopback = { declared: [NAME, port], direct: ['127.0.0.1', port], relay: ['127.0.0.1', relayPort] };
    const far = { declared: [FAR, farPort], direct: [FAR_ADDRESS, farPort], relay: ['127.0.0.1', farRelayPort] };
    for (const [m, env] of Object.entries(envs)) conns[m] = await connect({ env: { ...common, ...env } });
    const run = async (m, to, what, n) => {
      const [host, p] = to[m];
      const done = await confirmedRun(conns[m].client, { name: 'net', script: 'scripts/net.js', args: [what, host, String(p), String(n)] });
      const out = JSON.parse(done.json?.stdout || '{}');
      if (done.isError || out.error || done.json.exitCode !== 0) throw new Error(`${m} ${what}: ${done.text}`);
      return { out, receipt: done.json };
    };
    // Alternated, so all three see the same machine.
    const order = ['direct', 'relay', 'declared'];
    let receipt;
    const bulk = async (to, repeat) => {
      const tput = { declared: [], direct: [], relay: [] };
      for (let round = 0; round < repeat; round++) {
        for (const m of order) {
          const r = await run(m, to, 'bulk', 1);
          const { bytes, ms } = r.out.runs[0];
          if (bytes !== MB * 1048576) throw new Error(`${m}: ${bytes} bytes, not ${MB * 1048576}`);
          tput[m].push(bytes / (1 << 20) / (ms / 1000));
          if (m === 'declared') receipt = r.receipt.egress;
        }
      }
      return { declared: median(tput.declared), direct: median(tput.direct), relay: median(tput.relay) };
    };
    const setup = { declared: [], direct: [], relay: [] };
    for (let round = 0; round < 4; round++) {
      for (const m of order) setup[m].push(...(await run(m, loopback, 'setup', N / 4)).out.ms.slice(1));
    }
    const tput = await bulk(loopback, REPEAT);
    const f = (x) => x.toFixed(3);
    const pct = (x, y) => `${((x / y) * 100).toFixed(1)}%`;
    const sd = median(setup.declared), sf = median(setup.direct), sr = median(setup.relay);
    console.log(`egress setup (connect + 1-byte echo), median of ${setup.declared.length}: declared ${f(sd)} ms, floor (direct) ${f(sf)} ms, +${f(sd - sf)} ms; a bare relay ${f(sr)} ms, +${f(sr - sf)} ms`);
    console.log(`egress throughput on loopback (${MB} MB), median of ${REPEAT}: declared ${tput.declared.toFixed(0)} MB/s, floor (direct) ${tput.direct.toFixed(0)} MB/s, ${pct(tput.declared, tput.direct)} of the floor`);
    console.log(`  a bare relay (bench_relay): ${tput.relay.toFixed(0)} MB/s, ${pct(tput.relay, tput.direct)} of direct; declared is ${pct(tput.declared, tput.relay)} of it`);
    console.log(`declared receipt of the last loopback bulk run: ${JSON.stringify(receipt.hosts)}`);
    if (link.skip) {
      console.log(`egress throughput over a link: SKIP (${link.skip})`);
    } else {
      for (const rate of LINKS) {
        link.shape(rate);
        const t = await bulk(far, LINK_REPEAT);
        console.log(`egress throughput over a ${rate}/s link (${MB} MB), median of ${LINK_REPEAT}: declared ${t.declared.toFixed(0)} MB/s, floor (direct) ${t.direct.toFixed(0)} MB/s, ${pct(t.declared, t.direct)} of the floor (target >= 90% where the link sets the pace); a bare relay ${pct(t.relay, t.direct)}`);
      }
    }
  } finally {
    for (const c of Object.values(conns)) await c.close();
    for (const child of children) child.kill();
    if (!link.skip) link.close();
    fs.rmSync(base, { recursive: true, force: true });
  }
}

await main();
