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
//
// The server is this process, on 127.0.0.1; the declared name is pinned to it
// (SKILL_MCP_EGRESS_RESOLVE, SKILL_MCP_EGRESS_LOCAL=on).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
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

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const chunk = Buffer.alloc(1 << 20, 0x61);
  const server = net.createServer((sock) => {
    sock.once('data', (d) => {
      if (String(d) !== 'b') return sock.end(d);
      let left = MB;
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
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const relay = spawn(relayBin, [String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const relayPort = Number(await new Promise((resolve, reject) => {
    relay.stdout.once('data', (d) => resolve(String(d).trim()));
    relay.once('exit', (code) => reject(new Error(`bench_relay exited (${code})`)));
  }));
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-bench-egress-'));
  fs.chmodSync(base, 0o755);
  const dir = path.join(base, 'skills', 'net');
  fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), [
    '---', 'name: net', 'description: Connects to the bench server.', 'mcp-host:', '  version: 1',
    '  run:', '    - script: scripts/net.js', '      interpreter: node', '      timeout: 300',
    `  egress: [${NAME}]`, '---', '', 'Bench.', ''].join('\n'));
  fs.writeFileSync(path.join(dir, 'scripts', 'net.js'), SCRIPT);
  fs.chmodSync(base, 0o755);
  const common = {
    SKILLS_DIR: path.join(base, 'skills'), MCP_CONFIRM_MODE: 'auto', SKILL_MCP_LANDLOCK: 'auto',
    SKILL_MCP_EGRESS_ALLOW: `${NAME}:${port}`, SKILL_MCP_EGRESS_LOCAL: 'on',
    SKILL_MCP_EGRESS_RESOLVE: `${NAME}=127.0.0.1`,
  };
  const modes = {
    declared: { host: NAME, port, env: {} },
    direct: { host: '127.0.0.1', port, env: { SKILL_MCP_NETWORK: 'on' } },
    relay: { host: '127.0.0.1', port: relayPort, env: { SKILL_MCP_NETWORK: 'on' } },
  };
  const conns = {};
  for (const [m, { env }] of Object.entries(modes)) conns[m] = await connect({ env: { ...common, ...env } });
  const run = async (m, what, n) => {
    const done = await confirmedRun(conns[m].client, { name: 'net', script: 'scripts/net.js', args: [what, modes[m].host, String(modes[m].port), String(n)] });
    const out = JSON.parse(done.json?.stdout || '{}');
    if (done.isError || out.error || done.json.exitCode !== 0) throw new Error(`${m} ${what}: ${done.text}`);
    return { out, receipt: done.json };
  };
  try {
    // Alternated, so both see the same machine.
    const order = ['direct', 'relay', 'declared'];
    const setup = { declared: [], direct: [], relay: [] };
    for (let round = 0; round < 4; round++) {
      for (const m of order) setup[m].push(...(await run(m, 'setup', N / 4)).out.ms.slice(1));
    }
    const tput = { declared: [], direct: [], relay: [] };
    let receipt;
    for (let round = 0; round < REPEAT; round++) {
      for (const m of order) {
        const r = await run(m, 'bulk', 1);
        const { bytes, ms } = r.out.runs[0];
        if (bytes !== MB * 1048576) throw new Error(`${m}: ${bytes} bytes, not ${MB * 1048576}`);
        tput[m].push(bytes / (1 << 20) / (ms / 1000));
        if (m === 'declared') receipt = r.receipt.egress;
      }
    }
    const f = (x) => x.toFixed(3);
    const sd = median(setup.declared), sf = median(setup.direct), sr = median(setup.relay);
    console.log(`egress setup (connect + 1-byte echo), median of ${setup.declared.length}: declared ${f(sd)} ms, floor (direct) ${f(sf)} ms, +${f(sd - sf)} ms; a bare relay ${f(sr)} ms, +${f(sr - sf)} ms`);
    const td = median(tput.declared), tf = median(tput.direct), tr = median(tput.relay);
    const pct = (x, y) => `${((x / y) * 100).toFixed(1)}%`;
    console.log(`egress throughput (${MB} MB), median of ${REPEAT}: declared ${td.toFixed(0)} MB/s, floor (direct) ${tf.toFixed(0)} MB/s, ${pct(td, tf)} of the floor (target >= 90%)`);
    console.log(`  a bare relay (bench_relay): ${tr.toFixed(0)} MB/s, ${pct(tr, tf)} of direct; declared is ${pct(td, tr)} of it`);
    console.log(`declared receipt of the last bulk run: ${JSON.stringify(receipt.hosts)}`);
  } finally {
    for (const c of Object.values(conns)) await c.close();
    server.close();
    relay.kill();
    fs.rmSync(base, { recursive: true, force: true });
  }
}

await main();
