// Where a confirmed run's wall time goes, hop by hop, read from the kernel's own
// timestamps (`meson test -C build --benchmark run_hops`, or
// `node tests/bench/run_hops.mjs BROKER [N]`). Prints; asserts nothing.
//
// perf records scheduler and system-call tracepoints host-wide (needs root, or
// CAP_PERFMON with kernel.perf_event_paranoid <= 1) while a driver alternates
// `node one.js` spawned directly (the floor) with a confirmed `skill_run` of the same
// script. For each run, from the broker reading the request to its writing the answer:
//
//   prepare    the broker's recvfrom of the request -> its sendmsg of the run description
//   worker     -> the worker's first unshare (it woke, switched identity, dropped
//               capabilities, set limits)
//   cell       -> the worker's fork of the namespace's init (user and mount namespace, the
//               view, the pid and IPC namespace)
//   init       -> node's exec (fresh /proc, Landlock, fork of node, seccomp), of which
//     landlock   the run's first Landlock call (the ruleset's creation, or with a ruleset
//               made while the worker waited, its first rule) -> landlock_restrict_self
//   node       node's exec -> its exit_group (compare with the floor's)
//   end        node's exit_group -> the broker's answer (node's teardown, the wake-up of
//               whoever reaps it and reports the run's end on fd 4, the broker's wake-up,
//               the sweep, the scratch removal): compare with the floor's reap
// and, after node's exit_group too, what the answer no longer waits for (it is written on
// the reported end: worker/cell.h):
//   exit       -> the init's exit (without namespaces the worker's)
//   mirror     -> the worker's exit after the init's
//
// and, from sched_stat_runtime, node's CPU time between its exec and its exit_group:
//   node cpu       all its threads (V8's and libuv's workers too)
//   node main cpu  its main thread alone; node's wall time minus this is what the main
//                  thread spent off a CPU (waiting for one, or for its own workers)
//   others cpu     every other task's CPU time meanwhile (perf's own too): what node
//                  shared the 2 CPUs with
//
// and for the floor: spawn (the driver's fork -> exec), node (exec -> exit_group), reap
// (exit_group -> the driver's wait4 returning). With SKILL_MCP_NAMESPACES=off there is no
// init: `cell` and `init` become one hop, the worker's fork to node's exec.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { onJsonLines } from './json_lines.mjs';
import { benchStateDir } from './state_dir.mjs';

const EVENTS = [
  'sched:sched_process_fork', 'sched:sched_process_exec', 'sched:sched_process_exit',
  'syscalls:sys_enter_recvfrom', 'syscalls:sys_enter_sendmsg', 'syscalls:sys_enter_unshare',
  'syscalls:sys_enter_exit_group', 'syscalls:sys_exit_wait4',
  'syscalls:sys_enter_landlock_create_ruleset', 'syscalls:sys_enter_landlock_add_rule',
  'syscalls:sys_enter_landlock_restrict_self',
  'sched:sched_stat_runtime',
];

async function main() {
  const bin = process.argv[2];
  const N = Number(process.argv[3] || process.env.BENCH_N || 30);
  if (spawnSync('perf', ['--version']).status !== 0) {
    console.log('SKIP: perf is not installed (Debian: linux-perf)');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-run-hops-'));
  fs.chmodSync(dir, 0o755);
  try {
    // RUN_HOPS_ENV (a JSON object) adds to the broker's environment in both sittings, e.g.
    // '{"SKILL_MCP_LANDLOCK":"off"}' to see what one layer costs.
    const given = JSON.parse(process.env.RUN_HOPS_ENV || '{}');
    const state = benchStateDir(dir, given);
    console.log(`run_hops: ${state.note}`);
    const extra = { ...state.env, ...given };
    const sittings = [['every layer on', {}], ['SKILL_MCP_NAMESPACES=off', { SKILL_MCP_NAMESPACES: 'off' }]];
    for (const [name, own] of sittings) {
      const env = { ...extra, ...own };
      const label = Object.keys(given).length ? `${name}, with ${JSON.stringify(given)}` : name;
      const data = path.join(dir, 'perf.data');
      const pids = path.join(dir, 'pids.json');
      const rec = spawnSync('perf', ['record', '-q', '-a', '-o', data, ...EVENTS.flatMap((e) => ['-e', e]), '--',
        process.execPath, process.argv[1], '--drive', bin, pids, String(N)],
      { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, RUN_HOPS_ENV: JSON.stringify(env) }, encoding: 'utf8' });
      if (rec.status !== 0) {
        console.log(`SKIP: perf record failed (root or CAP_PERFMON needed): ${rec.stderr.trim().split('\n').pop()}`);
        return;
      }
      const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,pid,tid,time,event,trace'],
        { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
      report(label, parse(script.stdout), JSON.parse(fs.readFileSync(pids, 'utf8')), N);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// The driver, run under perf: the broker and the bare node spawns, alternating.
async function drive(bin, pidsFile, N) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-run-hops-tree-'));
  fs.chmodSync(root, 0o755);
  const dir = path.join(root, 'hops');
  fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: hops\ndescription: Run hops.\nmcp-host:\n  version: 1\n' +
    '  run:\n    - script: scripts/one.js\n      interpreter: node\n---\n# Hops\n');
  const script = path.join(dir, 'scripts', 'one.js');
  fs.writeFileSync(script, "process.stdout.write('x')\n");
  const child = spawn(bin, [], {
    env: { PATH: process.env.PATH, HOME: os.tmpdir(), SKILLS_DIR: root, MCP_CONFIRM_MODE: 'auto',
           ...JSON.parse(process.env.RUN_HOPS_ENV || '{}') },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const waiters = new Map();
  onJsonLines(child.stdout, (msg) => waiters.get(msg.id)?.(msg));
  let id = 0;
  const call = (method, params) => new Promise((resolve) => {
    waiters.set(++id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
  const pause = () => new Promise((r) => setTimeout(r, 20));
  await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hops', version: '1' } });
  const args = { name: 'hops', script: 'scripts/one.js', args: [] };
  for (let i = 0; i < N; i++) {
    // stdout and stderr are pipes read to the end, as a run's are: node sets up a socket
    // stream for a pipe where it writes /dev/null synchronously, about 2 ms more on the
    // slower of tests/bench/README.md's machines, which a floor must not leave out.
    spawnSync(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'],
                                            cwd: path.dirname(script),
                                            env: { PATH: process.env.PATH, HOME: os.tmpdir() } });
    await pause();
    const preview = await call('tools/call', { name: 'skill_run', arguments: args });
    const token = JSON.parse(preview.result.content[0].text).confirmToken;
    await pause();
    const done = await call('tools/call', { name: 'skill_run', arguments: { ...args, confirmToken: token } });
    const receipt = JSON.parse(done.result.content[0].text);
    if (receipt.exitCode !== 0) throw new Error('run failed: ' + done.result.content[0].text);
    await pause();
  }
  child.stdin.end();
  await new Promise((r) => child.on('exit', r));
  fs.writeFileSync(pidsFile, JSON.stringify({ driver: process.pid, broker: child.pid, node: process.execPath }));
  fs.rmSync(root, { recursive: true, force: true });
}

function parse(text) {
  const re = /^\s*(\S+)\s+(\d+)\/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$/;
  const out = [];
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    out.push({ comm: m[1], pid: Number(m[2]), tid: Number(m[3]), t: Number(m[4]) * 1000,
               ev: m[5].split(':').pop(), tr: m[6] });
  }
  return out;
}

const field = (tr, name) => {
  const m = new RegExp(`${name}[=:] *(0x[0-9a-f]+|\\d+)`).exec(tr);
  return m ? Number(m[1]) : NaN;
};

function report(label, events, { driver, broker }, N) {
  // Process ancestry from the fork events (threads appear too; they never exec or fork).
  const parent = new Map();
  for (const e of events) {
    if (e.ev === 'sched_process_fork') parent.set(field(e.tr, 'child_pid'), e.pid);
  }
  const execs = new Map();  // pid -> time of its exec of node
  // The worker execs node through a descriptor (filename /dev/fd/N): the new comm says node.
  for (const e of events) if (e.ev === 'sched_process_exec' && e.comm === 'node') execs.set(e.pid, e.t);
  const exitGroup = new Map(), procExit = new Map(), forks = new Map(), unshares = new Map();
  for (const e of events) {
    if (e.ev === 'sys_enter_exit_group' && !exitGroup.has(e.pid)) exitGroup.set(e.pid, e.t);
    if (e.ev === 'sched_process_exit' && /group_dead=true/.test(e.tr)) procExit.set(e.pid, e.t);
    if (e.ev === 'sched_process_fork' && e.pid === e.tid) {
      const kids = forks.get(e.pid) ?? [];
      kids.push({ t: e.t, child: field(e.tr, 'child_pid') });
      forks.set(e.pid, kids);
    }
    if (e.ev === 'sys_enter_unshare') (unshares.get(e.pid) ?? unshares.set(e.pid, []).get(e.pid)).push(e.t);
  }

  // CPU time from sched_stat_runtime, charged to the task named by the trace's pid= (a
  // thread id: the event can be emitted from another task's context). A thread's own
  // events carry its process's id as pid and its own as tid.
  const tgidOf = new Map();
  for (const e of events) if (e.tid !== e.pid) tgidOf.set(e.tid, e.pid);
  const runtime = new Map();  // process id -> [{ t, ns, main }]
  for (const e of events) {
    if (e.ev !== 'sched_stat_runtime') continue;
    const tid = field(e.tr, 'pid'), pid = tgidOf.get(tid) ?? tid;
    (runtime.get(pid) ?? runtime.set(pid, []).get(pid)).push({ t: e.t, ns: field(e.tr, 'runtime'), main: tid === pid });
  }
  const cpu = (pid, from, to) => {
    let all = 0, main = 0;
    for (const r of runtime.get(pid) ?? []) {
      if (r.t < from || r.t > to) continue;
      all += r.ns / 1e6;
      if (r.main) main += r.ns / 1e6;
    }
    return { all, main };
  };
  // Everyone else's CPU time while node ran (perf's own included): on 2 CPUs, what node
  // shared the machine with.
  const others = (pid, from, to) => {
    let ms = 0;
    for (const [p, rs] of runtime) {
      if (p === pid || p === 0) continue;
      for (const r of rs) if (r.t >= from && r.t <= to) ms += r.ns / 1e6;
    }
    return ms;
  };

  // The floor: the driver's children that exec node and were not the broker.
  const floor = { spawn: [], node: [], 'node cpu': [], 'node main cpu': [], 'others cpu': [], reap: [] };
  const waits = events.filter((e) => e.pid === driver && e.ev === 'sys_exit_wait4' && field(e.tr, '') !== 0);
  for (const { t, child } of forks.get(driver) ?? []) {
    if (child === broker || !execs.has(child) || !exitGroup.has(child)) continue;
    const exec = execs.get(child), end = exitGroup.get(child);
    const reaped = waits.find((w) => w.t > procExit.get(child));
    floor.spawn.push(exec - t);
    floor.node.push(end - exec);
    const c = cpu(child, exec, end);
    floor['node cpu'].push(c.all);
    floor['node main cpu'].push(c.main);
    floor['others cpu'].push(others(child, exec, end));
    if (reaped) floor.reap.push(reaped.t - end);
  }

  // The runs: each run description the broker sent (sendmsg on anything but fd 1).
  const hops = { prepare: [], worker: [], cell: [], init: [], landlock: [], node: [], 'node cpu': [],
                 'node main cpu': [], 'others cpu': [], end: [], exit: [], mirror: [], total: [] };
  const landlock = (pids, after) => {
    const at = (ev) => events.find((e) => pids.includes(e.pid) && e.ev === ev && e.t > after)?.t;
    const first = [at('sys_enter_landlock_create_ruleset'), at('sys_enter_landlock_add_rule')]
      .filter((t) => t !== undefined);
    const restricted = at('sys_enter_landlock_restrict_self');
    return first.length && restricted !== undefined ? restricted - Math.min(...first) : undefined;
  };
  const mine = events.filter((e) => e.pid === broker);
  for (let i = 0; i < mine.length; i++) {
    const s = mine[i];
    if (s.ev !== 'sys_enter_sendmsg' || field(s.tr, 'fd') === 1) continue;
    const request = mine.slice(0, i).reverse().find((e) => e.ev === 'sys_enter_recvfrom' && field(e.tr, 'fd') === 0);
    // The worker: the broker's child whose fork of the run comes first after the description.
    let worker, wfork;
    for (const [pid, kids] of forks) {
      if (parent.get(pid) !== broker) continue;
      const k = kids.find((f) => f.t > s.t);
      if (k && (!wfork || k.t < wfork.t)) { worker = pid; wfork = k; }
    }
    if (!worker) continue;
    const u = (unshares.get(worker) ?? []).find((t) => t > s.t);
    let init = null, nodePid = wfork.child;
    if (!execs.has(nodePid)) {  // an init between the worker and node
      init = wfork.child;
      nodePid = (forks.get(init) ?? [])[0]?.child;
    }
    const exec = execs.get(nodePid), end = exitGroup.get(nodePid);
    const initExit = init ? procExit.get(init) : undefined, workerExit = procExit.get(worker);
    const answer = mine.slice(i + 1).find((e) => e.ev === 'sys_enter_sendmsg' && field(e.tr, 'fd') === 1 && e.t > end);
    if (!request || exec === undefined || end === undefined || workerExit === undefined || !answer) continue;
    hops.prepare.push(s.t - request.t);
    hops.worker.push((u ?? wfork.t) - s.t);
    if (init) {
      hops.cell.push(wfork.t - (u ?? wfork.t));
      hops.init.push(exec - wfork.t);
    } else {
      hops.cell.push(exec - (u ?? wfork.t));
      hops.init.push(0);
    }
    const ll = landlock([worker, init, nodePid].filter((p) => p), s.t);
    if (ll !== undefined) hops.landlock.push(ll);
    hops.node.push(end - exec);
    const c = cpu(nodePid, exec, end);
    hops['node cpu'].push(c.all);
    hops['node main cpu'].push(c.main);
    hops['others cpu'].push(others(nodePid, exec, end));
    hops.end.push(answer.t - end);
    hops.exit.push((initExit ?? workerExit) - end);
    hops.mirror.push(init ? workerExit - initExit : 0);
    hops.total.push(answer.t - request.t);
  }

  const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[s.length >> 1] : NaN; };
  const p10 = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 10)] : NaN; };
  const f = (x) => (Number.isNaN(x) ? '-' : x.toFixed(3));
  const sg = (x) => (x >= 0 ? '+' : '') + f(x);
  console.log(`\n${label}: ${hops.total.length} of ${N} runs traced, ${floor.node.length} floor spawns ` +
              `(load average ${os.loadavg()[0].toFixed(1)})`);
  console.log('| hop | median ms | p10 ms |');
  console.log('|---|---|---|');
  for (const [k, v] of Object.entries(hops)) console.log(`| run: ${k} | ${f(med(v))} | ${f(p10(v))} |`);
  for (const [k, v] of Object.entries(floor)) console.log(`| floor: ${k} | ${f(med(v))} | ${f(p10(v))} |`);
  const fl = med(floor.spawn) + med(floor.node) + med(floor.reap);  // the cpu rows are inside node
  console.log(`| floor: total | ${f(fl)} | |`);
  const around = med(hops.total) - med(hops.node);
  const floorAround = med(floor.spawn) + med(floor.reap);
  console.log(`around node: run ${f(around)} ms against the floor's ${f(floorAround)} ms ` +
              `(${sg(around - floorAround)} ms); node itself ${sg(med(hops.node) - med(floor.node))} ms, ` +
              `its CPU time ${sg(med(hops['node cpu']) - med(floor['node cpu']))} ms (main thread ` +
              `${sg(med(hops['node main cpu']) - med(floor['node main cpu']))} ms)`);
  // Each run beside the floor spawn just before it, so that the machine's drift over a
  // sitting (a shared VM's speed moves by 20% over minutes) cancels out.
  if (hops.node.length === floor.node.length && floor.reap.length === floor.node.length) {
    const paired = (a, b) => med(a.map((x, i) => x - b[i]));
    console.log(`paired, each run minus the floor spawn before it (median): node ${sg(paired(hops.node, floor.node))} ms, ` +
                `its CPU time ${sg(paired(hops['node cpu'], floor['node cpu']))} ms; around node ` +
                `${sg(paired(hops.total.map((t, i) => t - hops.node[i]), floor.spawn.map((t, i) => t + floor.reap[i])))} ms`);
  }
}

if (process.argv[2] === '--drive') await drive(process.argv[3], process.argv[4], Number(process.argv[5]));
else await main();
