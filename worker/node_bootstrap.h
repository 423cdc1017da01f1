// The fixed program node runs with -e: ours, never the skill's. It turns the open script
// descriptor (fd 6) into node's CommonJS main module without ever resolving a path:
//
//   node -e <this> -- <script real path> <args...>
//
// - The source comes from fd 6 (pread from offset 0, whatever the broker's offset), then
//   fd 6 is closed. A script swapped for a symlink after the broker's check never runs
//   the target, and a file named like a node option is never parsed as one: the path
//   and the arguments come after "--", and node only stores them in process.argv.
// - The module gets the script's real path as its filename and node_modules lookup
//   paths, becomes require.main/process.mainModule, and is compiled as CommonJS, so
//   require('./lib'), __filename and __dirname behave as for `node script.js`.
// - process.argv becomes [execPath, script path, ...args]; process.execArgv is emptied
//   so child_process.fork() starts a plain node, not this bootstrap again.
// - The globals node -e defines (require, module, exports, __filename, __dirname) are
//   removed; the bootstrap's own names live inside a function and do not leak.
//
// Limitation, by choice: the script always runs as CommonJS. A ".mjs" script is refused
// with a message on stderr and exit code 1 (node can only load an ES module by path or
// URL, which would re-resolve what the broker checked); a ".js" script in a package
// with "type": "module" is still compiled as CommonJS, so static `import` statements
// there fail with node's SyntaxError. Dynamic import() from a CommonJS script works.
#pragma once

namespace skillmcp::worker {

inline constexpr char kNodeBootstrap[] = R"JS((function () {
'use strict';
const fs = require('fs');
const Module = require('module');
const path = require('path');
for (const k of ['require', 'module', 'exports', '__filename', '__dirname']) delete globalThis[k];
const file = process.argv[1];
const fail = (what) => {
  process.stderr.write('skill-mcp: ' + what + '\n');
  process.exit(1);
};
if (typeof file !== 'string' || !path.isAbsolute(file)) fail('no script path was given to the bootstrap');
if (file.endsWith('.mjs')) {
  fail('ES module scripts (.mjs) are not supported: skill-mcp runs the declared script as ' +
       'CommonJS from an already opened file; rename it to .js/.cjs and use require() or import()');
}
let source;
try {
  const size = fs.fstatSync(6).size;
  const buf = Buffer.allocUnsafe(size);
  let off = 0;
  while (off < size) {
    const n = fs.readSync(6, buf, off, size - off, off);
    if (n === 0) break;
    off += n;
  }
  source = buf.toString('utf8', 0, off);
  fs.closeSync(6);
} catch (e) {
  fail('could not read the script from its open descriptor: ' + e.message);
}
if (source.charCodeAt(0) === 0xFEFF) source = source.slice(1);
process.argv = [process.execPath, file, ...process.argv.slice(2)];
process.execArgv = [];
const m = new Module(file, null);
m.id = '.';
m.filename = file;
m.paths = Module._nodeModulePaths(path.dirname(file));
process.mainModule = m;
Module._cache[file] = m;
m._compile(source, file);
m.loaded = true;
})();
)JS";

}  // namespace skillmcp::worker
