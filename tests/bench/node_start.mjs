// What the worker's bootstrap costs node, without the broker and worker around it
// (`meson test -C build --benchmark node_start`, or
// `node tests/bench/node_start.mjs worker/node_bootstrap.h [N]`). Prints; asserts nothing.
//
// Ways to start the same one-line script (it writes one byte to stdout), interleaved, N
// times each:
//   bare     node one.js
//   eval     node -e <bootstrap> -- one.js         (the worker's fallback way)
//   main-fd  node --preserve-symlinks-main /proc/self/fd/8 one.js, the bootstrap at fd 8
// with the script open at fd 6 as the worker leaves it; stdout /dev/null, and then a pipe
// read to the end for bare and main-fd: a run's stdout is a pipe, and node builds a socket
// stream for a pipe where it writes /dev/null synchronously (README.md, "Which
// JavaScript: a pipe on stdout, and the bootstrap"). And one way the worker does not
// take, measured as the floor of another design:
//   snapshot node --snapshot-blob <blob> one.js, the blob a user-land startup snapshot
//            (node --build-snapshot) whose main function only reads fd 6 and compiles it
//            as the main module: node's own main-module start skipped (README.md, "A
//            user-land startup snapshot instead of the bootstrap module").
// Wall medians and 10th percentiles; with valgrind installed, also callgrind's
// instruction counts of node with V8's randomness fixed (--single-threaded
// --random-seed=1), which do not move with the machine's load (the same count to within
// 0.001% run after run; tests/bench/README.md, "where node's extra time under the worker
// went"); with GNU time installed, node's minor page faults, which callgrind does not
// count.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const header = fs.readFileSync(process.argv[2], 'utf8');
const N = Number(process.argv[3] || process.env.BENCH_N || 100);
const begin = header.indexOf('R"JS(') + 5;
const bootstrap = header.slice(begin, header.indexOf(')JS"', begin));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skill-mcp-node-start-'));
const script = path.join(dir, 'one.js');
const bootFile = path.join(dir, 'bootstrap.js');
fs.writeFileSync(script, "process.stdout.write('x')\n");
fs.writeFileSync(bootFile, bootstrap);
const fd6 = fs.openSync(script, 'r');
const fd8 = fs.openSync(bootFile, 'r');
const env = { PATH: process.env.PATH, HOME: os.tmpdir() };
const stdio = (out) => ['ignore', out, 'inherit', 'ignore', 'ignore', 'ignore', fd6, 'ignore', fd8];
const mainFd = ['--preserve-symlinks-main', '/proc/self/fd/8', script];
const ways = [
  ['bare', [script], 'ignore'],
  ['eval', ['-e', bootstrap, '--', script], 'ignore'],
  ['main-fd', mainFd, 'ignore'],
  ['bare, stdout a pipe', [script], 'pipe'],
  ['main-fd, stdout a pipe (a run)', mainFd, 'pipe'],
];

// The snapshot floor's blobs: one for the wall-clock starts, one for callgrind's, whose
// V8 flags differ (node refuses a blob built under other flags). null where this node
// cannot build one.
const snapshotEntry = path.join(dir, 'snapshot-entry.js');
fs.writeFileSync(snapshotEntry, `const fs = require('fs');
const path = require('path');
require('v8').startupSnapshot.setDeserializeMainFunction(() => {
  const Module = require('module');
  const file = process.argv[1];
  const m = new Module(file, null);
  m.id = '.';
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  process.mainModule = m;
  // From offset 0, whatever fd 6's shared offset (every start here shares one).
  const buf = Buffer.allocUnsafe(fs.fstatSync(6).size);
  for (let off = 0, n; off < buf.length && (n = fs.readSync(6, buf, off, buf.length - off, off)) !== 0;)
    off += n;
  m._compile(buf.toString('utf8'), file, 'commonjs');
});
`);
function buildBlob(name, flags) {
  const blob = path.join(dir, name);
  const r = spawnSync(process.execPath, [...flags, '--snapshot-blob', blob, '--build-snapshot',
    snapshotEntry], { cwd: dir, env, encoding: 'utf8' });
  return r.status === 0 ? blob : null;
}
const blob = buildBlob('floor.blob', []);
const ccFlags = ['--single-threaded', '--random-seed=1'];
const ccBlob = buildBlob('floor-callgrind.blob', ccFlags);
if (blob) {
  ways.push(['snapshot floor', ['--snapshot-blob', blob, script], 'ignore', ccBlob]);
  ways.push(['snapshot floor, stdout a pipe', ['--snapshot-blob', blob, script], 'pipe', ccBlob]);
}

const spawnNode = (cmd, argv, out) =>
  spawnSync(cmd, argv, { stdio: stdio(out), cwd: dir, env, encoding: 'utf8' });
const wall = ways.map(() => []);
for (let i = 0; i < N; i++) {
  ways.forEach(([name, argv, out], k) => {
    const t0 = process.hrtime.bigint();
    const r = spawnNode(process.execPath, argv, out);
    wall[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) throw new Error(`${name} exited ${r.status}`);
  });
}
const q = (a, f) => [...a].sort((x, y) => x - y)[Math.floor(a.length * f)];
console.log(`node ${process.version}, ${N} interleaved starts each, load ${os.loadavg()[0].toFixed(1)}`);
if (!blob) console.log('snapshot floor: SKIP (this node could not build a startup snapshot)');
console.log('| way | wall median | over bare | wall p10 | over bare | instructions | over bare | ' +
            'page faults |');
console.log('|---|---|---|---|---|---|---|---|');

// Callgrind's total for node alone (children untraced), or null without valgrind.
function instructions(argv, out, callgrindBlob) {
  const opts = ['--tool=callgrind', '--callgrind-out-file=/dev/null'];
  if (callgrindBlob !== undefined) {
    if (callgrindBlob === null) return null;
    argv = ['--snapshot-blob', callgrindBlob, ...argv.slice(2)];
  }
  const args = [...opts, process.execPath, ...ccFlags, ...argv];
  const r = spawnSync('valgrind', args, { stdio: ['ignore', out, 'pipe', 'ignore', 'ignore',
    'ignore', fd6, 'ignore', fd8], cwd: dir, env, encoding: 'utf8' });
  const m = /refs:\s+([\d,]+)/.exec(r.stderr || '');
  return m ? Number(m[1].replaceAll(',', '')) : null;
}
const ir = ways.map(([, argv, out, callgrindBlob]) => instructions(argv, out, callgrindBlob));
// Minor page faults (GNU time's %R), the median of 5 starts, or null without GNU time.
function pageFaults(argv, out) {
  if (!fs.existsSync('/usr/bin/time')) return null;
  const counts = [];
  for (let i = 0; i < 5; i++) {
    const faultsStdio = stdio(out);
    faultsStdio[2] = 'pipe';  // GNU time's line, after whatever node wrote there
    const r = spawnSync('/usr/bin/time', ['-f', 'faults %R', process.execPath, ...argv],
                        { stdio: faultsStdio, cwd: dir, env, encoding: 'utf8' });
    const m = /faults (\d+)\s*$/.exec(r.stderr || '');
    if (r.status !== 0 || !m) return null;
    counts.push(Number(m[1]));
  }
  return q(counts, 0.5);
}
const faults = ways.map(([, argv, out]) => pageFaults(argv, out));
const fmt = (x) => x.toFixed(2);
const signed = (x, d = 2) => (x < 0 ? '' : '+') + x.toFixed(d);
ways.forEach(([name], k) => {
  const [m, p] = [q(wall[k], 0.5), q(wall[k], 0.1)];
  const [m0, p0] = [q(wall[0], 0.5), q(wall[0], 0.1)];
  const irCell = ir[k] === null ? 'SKIP (no valgrind)' : `${(ir[k] / 1e6).toFixed(1)} M`;
  const irOver = ir[k] === null ? '' : `${signed((ir[k] - ir[0]) / 1e6, 1)} M`;
  const faultCell = faults[k] === null ? 'SKIP (no GNU time)' : String(faults[k]);
  console.log(`| ${name} | ${fmt(m)} ms | ${signed(m - m0)} ms | ${fmt(p)} ms | ${signed(p - p0)} ms | ` +
              `${irCell} | ${irOver} | ${faultCell} |`);
});
fs.rmSync(dir, { recursive: true, force: true });
