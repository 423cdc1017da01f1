// skill-mcp benchmarks, run on demand (`meson test -C build --benchmark`, or
// `node tests/bench/bench.mjs BIN`). Prints figures and ratios; asserts nothing.
//   1. cold start: spawn to the `initialize` answer (median of N)
//   2. peak RSS of the broker after listing a 32-skill tree (VmHWM)
//   3. a confirmed skill_run of a one-line node script, end to end, against bare
//      `node script.js`, interleaved, medians; the difference is the run overhead
//      without namespaces (also with SKILL_MCP_NAMESPACES=on, the cell of the default
//      auto, then with SKILL_MCP_NETWORK=off too, the one layer that is off by default,
//      with SKILL_MCP_LANDLOCK=off, and with /bin/true pinned as interpreter). The floor
//      is node spawned by this process, as a client would; the worker started ahead
//      spawns node from a small process, so part of that spawn is off the run's path
//      (run_hops.mjs gives the kernel's view, hop by hop).
//   4. the same for a one-line Python script with SKILL_MCP_INTERPRETERS=node,python3 and
//      /usr/bin/python3 pinned, against bare `python3 -I script.py` spawned the same way.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { onJsonLines } from './json_lines.mjs';
import { benchStateDir } from './state_dir.mjs';

const bin = process.argv[2] ?? process.env.SKILL_MCP_BIN;
if (!bin) { console.error('usage: bench.mjs PATH/TO/skill-mcp'); process.exit(2); }
const N = Number(process.env.BENCH_N ?? 30);

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (x) => x.toFixed(2);
const signed = (x) => (x < 0 ? '' : '+') + fmt(x);

function makeTree(skills) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-bench-'));
  fs.chmodSync(root, 0o755);
  for (let i = 0; i < skills; i++) {
    const dir = path.join(root, `skill-${String(i).padStart(2, '0')}`);
    fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true, mode: 0o755 });
    fs.writeFileSync(path.join(dir, 'SKILL.md'),
      `---\nname: skill-${String(i).padStart(2, '0')}\ndescription: Benchmark skill ${i}.\n` +
      'mcp-host:\n  version: 1\n  run:\n    - script: scripts/one.js\n      interpreter: node\n' +
      '    - script: scripts/one.py\n      interpreter: python3\n---\n' +
      `# Skill ${i}\n\n` + 'Some instructions.\n'.repeat(50));
    fs.writeFileSync(path.join(dir, 'scripts', 'one.js'), "process.stdout.write('x')\n");
    fs.writeFileSync(path.join(dir, 'scripts', 'one.py'), "import sys\nsys.stdout.write('x')\n");
    for (let f = 0; f < 20; f++) fs.writeFileSync(path.join(dir, `ref-${f}.md`), 'reference\n'.repeat(100));
  }
  return root;
}

// A broker speaking line-delimited JSON-RPC; `call` resolves with the answer.
function startBroker(env) {
  const child = spawn(bin, [], { env: { PATH: process.env.PATH, HOME: os.tmpdir(), ...env },
                                 stdio: ['pipe', 'pipe', 'ignore'] });
  const waiters = new Map();
  onJsonLines(child.stdout, (msg) => {
    waiters.get(msg.id)?.resolve(msg);
    waiters.delete(msg.id);
  });
  // A broker that refuses to start (a boot error) fails the calls, not the benchmark.
  child.stdin.on('error', () => {});  // EPIPE once it is gone; the exit says why
  let exited = null;
  child.on('exit', (code) => {
    exited = new Error(`the broker exited (${code}) before answering`);
    for (const w of waiters.values()) w.reject(exited);
    waiters.clear();
  });
  let id = 0;
  const call = (method, params) => new Promise((resolve, reject) => {
    if (exited) return reject(exited);
    const my = ++id;
    waiters.set(my, { resolve, reject });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: my, method, params }) + '\n');
  });
  const init = () => call('initialize', { protocolVersion: '2025-06-18', capabilities: {},
                                          clientInfo: { name: 'bench', version: '1' } });
  return { child, call, init };
}

async function coldStart(root) {
  const times = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    const b = startBroker({ SKILLS_DIR: root });
    await b.init();
    times.push(ms(t0));
    b.child.stdin.end();
    await new Promise((r) => b.child.on('exit', r));
  }
  return median(times);
}

// The same spawn path to a process that does nothing, to separate the cost of spawning
// from node from the broker's own start.
async function spawnBaseline() {
  const times = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    const c = spawn('/bin/true', [], { stdio: ['pipe', 'pipe', 'ignore'] });
    await new Promise((r) => c.on('exit', r));
    times.push(ms(t0));
  }
  return median(times);
}

async function peakRss(root) {
  const b = startBroker({ SKILLS_DIR: root });
  await b.init();
  const list = await b.call('tools/call', { name: 'skill_list', arguments: {} });
  const skills = JSON.parse(list.result.content[0].text).skills.length;
  const status = fs.readFileSync(`/proc/${b.child.pid}/status`, 'utf8');
  const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
  const anon = Number(/RssAnon:\s+(\d+)/.exec(status)[1]);
  const file = Number(/RssFile:\s+(\d+)/.exec(status)[1]);
  b.child.stdin.end();
  await new Promise((r) => b.child.on('exit', r));
  return { skills, hwmKiB: hwm, anonKiB: anon, fileKiB: file };
}

// The runs' brokers take the installed path where this is root (state_dir.mjs); made in
// the try below, whose finally removes it even when its chown fails.
const stateParent = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-bench-state-'));
let runState;

// `floor`: the interpreter and its options the bare spawn uses (node by default).
async function runOverhead(root, extraEnv = {}, { rel = 'scripts/one.js', floor = [process.execPath] } = {}) {
  const b = startBroker({ SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto', ...runState.env, ...extraEnv });
  await b.init();
  const script = path.join(root, 'skill-00', rel);
  const args = { name: 'skill-00', script: rel, args: [] };
  const bare = [], run = [];
  for (let i = 0; i < N; i++) {
    let t0 = process.hrtime.bigint();
    // The same small environment the script gets under skill_run (the allowlist), so
    // the comparison is not skewed by variables such as NODE_EXTRA_CA_CERTS.
    // stdout and stderr are pipes read to the end, as a run's are: node sets up a socket
    // stream for a pipe where it writes /dev/null synchronously, about 2 ms more on the
    // slower of tests/bench/README.md's machines, which a floor must not leave out.
    spawnSync(floor[0], [...floor.slice(1), script], { stdio: ['ignore', 'pipe', 'pipe'],
                                            cwd: path.dirname(script),
                                            env: { PATH: process.env.PATH, HOME: os.tmpdir() } });
    bare.push(ms(t0));
    const first = await b.call('tools/call', { name: 'skill_run', arguments: args });
    const token = JSON.parse(first.result.content[0].text).confirmToken;
    t0 = process.hrtime.bigint();
    const done = await b.call('tools/call', { name: 'skill_run', arguments: { ...args, confirmToken: token } });
    run.push(ms(t0));
    const receipt = JSON.parse(done.result.content[0].text);
    if (receipt.exitCode !== 0) throw new Error('run failed: ' + done.result.content[0].text);
  }
  b.child.stdin.end();
  // paired: the median of each run minus the bare spawn just before it, which the
  // machine's drift over a sitting does not move (up to 20% over a minute on one test
  // machine; README.md, "With the fair floor").
  return { bare: median(bare), run: median(run), paired: median(run.map((r, i) => r - bare[i])) };
}

const root = makeTree(32);
try {
  runState = benchStateDir(stateParent);
  const start = await coldStart(root);
  const base = await spawnBaseline();
  const rss = await peakRss(root);
  const ov = await runOverhead(root, { SKILL_MCP_NAMESPACES: 'off' });
  // The same confirmed run with /bin/true pinned as the interpreter: everything but node
  // (JSON-RPC, fork, worker setup with seccomp and the uid switch, exec, reap).
  const shell = await runOverhead(root, { SKILL_MCP_NODE: '/bin/true', SKILL_MCP_NAMESPACES: 'off' });
  // The same run in its cell: its own user, mount, pid and IPC namespace (the default).
  const ns = await runOverhead(root, { SKILL_MCP_NAMESPACES: 'on' });
  // And with the one layer off by default: TCP refused (Landlock ABI 4+; a broker that
  // cannot refuses to start, and the row says so).
  const netOff = await runOverhead(root, { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_NETWORK: 'off' })
    .catch((e) => ({ error: e.message }));
  // What the Landlock allowlist and the scratch TMPDIR cost (on by default where the
  // kernel has Landlock): node and /bin/true runs without the allowlist.
  const noLandlock = await runOverhead(root, { SKILL_MCP_LANDLOCK: 'off' });
  const shellNoLandlock = await runOverhead(root, { SKILL_MCP_NODE: '/bin/true', SKILL_MCP_LANDLOCK: 'off' });
  // A Python script in the same cell (every layer on), against bare `python3 -I`.
  const py = await runOverhead(root,
    { SKILL_MCP_NAMESPACES: 'on', SKILL_MCP_INTERPRETERS: 'node,python3', SKILL_MCP_PYTHON3: '/usr/bin/python3' },
    { rel: 'scripts/one.py', floor: ['/usr/bin/python3', '-I'] })
    .catch((e) => ({ error: e.message }));
  console.log(`cold start to initialize answer (32 skills, median of ${N}): ${fmt(start)} ms`);
  console.log(`  spawning /bin/true the same way: ${fmt(base)} ms; the broker's own share: ${fmt(start - base)} ms`);
  console.log(`peak RSS after skill_list (${rss.skills} skills): ${(rss.hwmKiB / 1024).toFixed(1)} MiB ` +
              `(now: ${(rss.anonKiB / 1024).toFixed(1)} MiB private, ` +
              `${(rss.fileKiB / 1024).toFixed(1)} MiB shared library and file pages)`);
  console.log(`the runs' brokers: ${runState.note}`);
  console.log(`bare node one-line script (median): ${fmt(ov.bare)} ms`);
  console.log(`confirmed skill_run of it, end to end (median): ${fmt(ov.run)} ms`);
  console.log(`run overhead: ${fmt(ov.run - ov.bare)} ms (ratio ${(ov.run / ov.bare).toFixed(2)}x bare node; ` +
              `paired ${signed(ov.paired)} ms)`);
  console.log(`with SKILL_MCP_NAMESPACES=on: ${fmt(ns.run)} ms against ${fmt(ns.bare)} ms bare ` +
              `(overhead ${fmt(ns.run - ns.bare)} ms; paired ${signed(ns.paired)} ms)`);
  console.log(`with SKILL_MCP_LANDLOCK=off: ${fmt(noLandlock.run)} ms against ${fmt(noLandlock.bare)} ms ` +
              `bare (overhead ${fmt(noLandlock.run - noLandlock.bare)} ms); /bin/true runs ` +
              `${fmt(shellNoLandlock.run)} ms without the allowlist, ${fmt(shell.run)} ms with it`);
  console.log(`the same run with /bin/true as interpreter: ${fmt(shell.run)} ms ` +
              `(spawning /bin/true directly: ${fmt(base)} ms; broker + worker share: ` +
              `${fmt(shell.run - base)} ms)`);
  // The run's figures and their floors: each figure, its floor from this run, the ratio,
  // and the target it is held to (docs/performance.md).
  const x = (v, f) => `${(v / f).toFixed(2)}x`;
  const rows = [
    ['spawn -> initialize, 32 skills', `${fmt(start)} ms`, `${fmt(base)} ms (spawn /bin/true)`, x(start, base), '<= 2 ms'],
    ['peak RSS, 32 skills', `${(rss.hwmKiB / 1024).toFixed(1)} MiB`, '-', '-', '<= 8 MiB'],
    ['confirmed run, every layer on', `${fmt(ns.run)} ms`, `${fmt(ns.bare)} ms (bare node)`,
     `${signed(ns.run - ns.bare)} ms (paired ${signed(ns.paired)} ms)`, '<= +1.0 ms'],
    netOff.error
      ? ['confirmed run, every layer on, network off too', `SKIP (${netOff.error})`, '-', '-', '']
      : ['confirmed run, every layer on, network off too', `${fmt(netOff.run)} ms`,
         `${fmt(netOff.bare)} ms (bare node)`,
         `${signed(netOff.run - netOff.bare)} ms (paired ${signed(netOff.paired)} ms)`, '<= +1.0 ms'],
    ['confirmed run, namespaces off', `${fmt(ov.run)} ms`, `${fmt(ov.bare)} ms (bare node)`,
     `${signed(ov.run - ov.bare)} ms (paired ${signed(ov.paired)} ms)`, ''],
    ['confirmed run of /bin/true', `${fmt(shell.run)} ms`, `${fmt(base)} ms (spawn /bin/true)`,
     `${signed(shell.run - base)} ms`, ''],
    py.error
      ? ['confirmed Python run, every layer on', `SKIP (${py.error})`, '-', '-', '']
      : ['confirmed Python run, every layer on', `${fmt(py.run)} ms`, `${fmt(py.bare)} ms (bare python3 -I)`,
         `${signed(py.run - py.bare)} ms (paired ${signed(py.paired)} ms)`, '<= +1.0 ms'],
  ];
  console.log('\n| figure | server | floor (this run) | ratio | target |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(`load average: ${os.loadavg().map((v) => v.toFixed(2)).join(' ')} ` +
              '(the read-path rows are printed by the read benchmark)');
} finally {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(stateParent, { recursive: true, force: true });
}
