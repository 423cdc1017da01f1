// Soak test, on demand (`meson test -C build --benchmark soak`, or
// `node tests/bench/soak.mjs BUILD/broker/skill-mcp`): one connection carries SOAK_RUNS
// confirmed skill_run calls (default 1,000; the preview-and-token flow under
// MCP_CONFIRM_MODE=auto) and SOAK_PINGS pings (default 100,000). The broker's open
// descriptors, resident memory and children are sampled after a warm-up and at the end
// and printed; the test fails if descriptors or children grew, or memory grew by more
// than SOAK_RSS_SLACK_KIB (default 4096).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { onJsonLines } from './json_lines.mjs';

const bin = process.argv[2] ?? process.env.SKILL_MCP_BIN;
if (!bin) { console.error('usage: soak.mjs PATH/TO/skill-mcp'); process.exit(2); }
const RUNS = Number(process.env.SOAK_RUNS ?? 1000);
const PINGS = Number(process.env.SOAK_PINGS ?? 100000);
const RSS_SLACK_KIB = Number(process.env.SOAK_RSS_SLACK_KIB ?? 4096);

function makeTree() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-soak-'));
  const dir = path.join(root, 'soak');
  fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'),
    '---\nname: soak\ndescription: Prints one line.\nmcp-host:\n  version: 1\n  run:\n' +
    '    - script: scripts/one.js\n      interpreter: node\n      timeout: 10\n---\n# Soak\n');
  fs.writeFileSync(path.join(dir, 'scripts', 'one.js'), "process.stdout.write(process.argv[2] ?? 'x')\n");
  execFileSync('chmod', ['-R', 'a+rX', root]);
  return root;
}

function startBroker(root) {
  const env = { PATH: process.env.PATH, HOME: os.tmpdir(), LANG: 'C.UTF-8', SKILLS_DIR: root,
                MCP_CONFIRM_MODE: 'auto' };
  if (process.env.SKILL_MCP_WORKER) env.SKILL_MCP_WORKER = process.env.SKILL_MCP_WORKER;
  const child = spawn(bin, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; if (stderr.length > 65536) stderr = stderr.slice(-32768); });
  const waiters = new Map();
  onJsonLines(child.stdout, (msg) => {
    const w = waiters.get(msg.id);
    if (!w) throw new Error(`an answer nobody asked for: ${JSON.stringify(msg).slice(0, 200)}`);
    waiters.delete(msg.id);
    w(msg);
  });
  let id = 0;
  const send = (method, params) => {
    const my = ++id;
    const answer = new Promise((resolve) => waiters.set(my, resolve));
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: my, method, params }) + '\n');
    return answer;
  };
  return { child, send, stderr: () => stderr };
}

// Whether `child` is the worker started ahead for the next run (broker/run/worker_pool.h)
// and has exec'd it: until then it shares the broker's memory (broker/run/spawn.cc,
// CLONE_VM | CLONE_VFORK) and the broker, asleep in the spawn, still holds the spawn's own
// descriptors, which a sample must not count as grown. Between runs no other child of the
// broker runs the worker binary (a run's worker is reaped before its answer); the one
// started ahead leads a session of its own (it takes it while it waits). Read from `comm`
// and `stat`, which anyone may read: the worker is not dumpable, so its `exe` link is
// closed to a soak that is not root.
function waitingWorker(child) {
  try {
    const comm = fs.readFileSync(`/proc/${child}/comm`, 'utf8').trim();
    const stat = fs.readFileSync(`/proc/${child}/stat`, 'utf8');
    const session = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
    return comm === 'skill-mcp-worke' && session === Number(child);
  } catch {
    return false;
  }
}

// `children` leaves out the worker started ahead; `waiting` says whether it is there and
// has exec'd.
function sample(pid) {
  const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
  const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  let children = 0;
  let waiting = 0;
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const list = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    for (const child of list ? list.split(/\s+/) : []) {
      if (waiting === 0 && waitingWorker(child)) waiting = 1;
      else children += 1;
    }
  }
  return { fds, rssKiB: rss, children, waiting };
}

async function confirmedRun(b, n) {
  const args = { name: 'soak', script: 'scripts/one.js', args: [`r${n}`] };
  const first = await b.send('tools/call', { name: 'skill_run', arguments: args });
  const preview = JSON.parse(first.result.content[0].text);
  if (preview.status !== 'confirmation-required') throw new Error(`run ${n}: ${first.result.content[0].text}`);
  const second = await b.send('tools/call', { name: 'skill_run',
                                              arguments: { ...args, confirmToken: preview.confirmToken } });
  const receipt = JSON.parse(second.result.content[0].text);
  if (receipt.exitCode !== 0 || receipt.stdout !== `r${n}`) {
    throw new Error(`run ${n} did not run as confirmed: ${second.result.content[0].text.slice(0, 500)}`);
  }
}

async function pings(b, count) {
  const batch = 1000;
  for (let done = 0; done < count; done += batch) {
    const answers = [];
    for (let i = 0; i < Math.min(batch, count - done); i++) answers.push(b.send('ping', {}));
    for (const a of await Promise.all(answers)) if (!a.result) throw new Error(JSON.stringify(a));
  }
}

// Children are reaped just after a result is sent: give the broker a moment to settle.
// Both samples are taken in the same steady state: the next run's worker started ahead
// and exec'd, and the broker back from the spawn (one more sample 20 ms later, since it
// closes the spawn's descriptors just after the exec wakes it).
async function settled(pid) {
  const pause = () => new Promise((r) => setTimeout(r, 20));
  let s = sample(pid);
  for (let i = 0; i < 50 && (s.children > 0 || s.waiting === 0); i++) {
    await pause();
    s = sample(pid);
  }
  await pause();
  return sample(pid);
}

const root = makeTree();
const b = startBroker(root);
const t0 = Date.now();
try {
  await b.send('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } });
  b.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  const warmRuns = Math.max(1, Math.floor(RUNS / 10));
  const warmPings = Math.floor(PINGS / 10);
  for (let n = 0; n < warmRuns; n++) await confirmedRun(b, n);
  await pings(b, warmPings);
  const warm = await settled(b.child.pid);
  for (let n = warmRuns; n < RUNS; n++) {
    await confirmedRun(b, n);
    // Pings spread between the runs.
    if (n % 10 === 0) await pings(b, Math.floor((PINGS - warmPings) / Math.ceil((RUNS - warmRuns) / 10)));
  }
  const end = await settled(b.child.pid);
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`soak: ${RUNS} confirmed runs and ${PINGS} pings on one connection in ${secs} s`);
  console.log(`  after warm-up (${warmRuns} runs, ${warmPings} pings): ${warm.fds} fds, ${warm.rssKiB} KiB resident, ${warm.children} children (+${warm.waiting} waiting worker)`);
  console.log(`  at the end:                              ${end.fds} fds, ${end.rssKiB} KiB resident, ${end.children} children (+${end.waiting} waiting worker)`);
  const problems = [];
  if (end.fds > warm.fds) problems.push(`descriptors grew from ${warm.fds} to ${end.fds}`);
  if (end.children > 0) problems.push(`${end.children} children left`);
  if (end.waiting !== warm.waiting) problems.push('the worker started ahead came or went');
  if (end.rssKiB - warm.rssKiB > RSS_SLACK_KIB) problems.push(`memory grew by ${end.rssKiB - warm.rssKiB} KiB`);
  b.child.stdin.end();
  const code = await new Promise((r) => b.child.on('exit', r));
  if (code !== 0) problems.push(`exit status ${code}`);
  if (problems.length) {
    console.error(`soak FAILED: ${problems.join('; ')}\n${b.stderr().slice(-4000)}`);
    process.exitCode = 1;
  }
} catch (err) {
  console.error(`soak FAILED: ${err.stack}\nbroker stderr:\n${b.stderr().slice(-4000)}`);
  b.child.kill('SIGKILL');
  process.exitCode = 1;
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
