// The fixed program node runs first: ours, never the skill's. It runs the open script
// descriptor (fd 6) as node's main module without ever resolving the entry's path again.
// The worker hands it to node in one of two ways (worker/exec.h):
//
//   node --preserve-symlinks-main /proc/self/fd/8 <script real path> <args...>
//   node -e <this> -- <script real path> <args...>
//
// The first, where the run's /proc shows the worker's sealed copy at fd 8: node loads
// it as its CommonJS main module, which skips what node -e sets up around an eval
// (7.6 M instructions, about 1 ms, at every run's start). The second
// where it does not. The bootstrap tells them apart by process._eval (set only by -e).
//
// - The main-module way: fd 8 is closed and the bootstrap's own module leaves
//   require.cache before anything of the script runs; process.mainModule is the
//   script's module (CommonJS) or undefined (ES module), as with node -e.
// - The bytes come from fd 6 (pread from offset 0, whatever the broker's offset), then
//   fd 6 is closed. A script swapped for a symlink after the broker's check never runs
//   the target, and a file named like a node option is never parsed as one: the path
//   and the arguments come after "--" (or the main module's path), and node only
//   stores them in process.argv.
// - The module type is chosen as `node script` chooses it on node 20.19+: ".mjs" is an
//   ES module, ".cjs" CommonJS; otherwise the nearest package.json (not above a
//   node_modules directory) decides with "type": "module" or "commonjs"; a file of no
//   declared type is CommonJS unless it fails to compile as such because of module
//   syntax (import/export, import.meta, top-level await...), which node's own compile
//   reports, and then it is an ES module (with node's MODULE_TYPELESS_PACKAGE_JSON
//   warning when a package.json without "type" was found).
// - CommonJS: the module gets the real path as its filename and node_modules lookup
//   paths, becomes require.main/process.mainModule and is compiled from the bytes, so
//   require('./lib'), __filename and __dirname behave as for `node script.js`.
// - ES module: a module loader hook (module.register, run by node on its hooks thread)
//   answers the entry's file: URL itself: resolve never stats or realpaths it, load serves
//   the bytes read from fd 6. The module is then import()ed under that URL, so
//   import.meta.url, static and dynamic relative imports and top-level await behave as
//   for `node script.mjs`; every other specifier goes to node's own resolve and load.
//   As node does, a top-level await still pending when the process exits gives exit code
//   13, and an error thrown by the module is reported as uncaught (exit code 1).
// - process.argv becomes [execPath, script path, ...args]; process.execArgv is emptied
//   so child_process.fork() starts a plain node, not this bootstrap again.
// - What node -e defines is removed (the -e way only): process._eval (this program's
//   text), the globals require, module, exports, __filename, __dirname and one lazy
//   global per builtin module (fs, path, http...). node -e puts `module` back once this
//   program returns (it saved the lazy one first), so a setter on the global object's
//   own prototype swallows that one assignment and removes itself.
//   The bootstrap's own names live inside a function and do not leak.
// Why a hook and not a path: node loads an ES module only by URL, and its default resolve
// realpaths that URL, which would run whatever the path names now (worker/README.md, "node and
// the open script").
#pragma once

namespace skillmcp::worker {

inline constexpr char kNodeBootstrap[] = R"JS((function () {
'use strict';
const fs = require('fs');
const path = require('path');
// -e removes the global require (leaveNoEvalTrace) before the ES module way needs 'url'.
const builtin = require;
const viaEval = typeof process._eval === 'string';
// The CommonJS loader's Module class. node -e has loaded the public 'module' already; as
// a main module the bootstrap takes the class from its own module object and loads
// 'module' (and with it the ES module loader) only for an ES module script.
const Module = viaEval ? require('module') : module.constructor;
if (viaEval) {
  leaveNoEvalTrace();
} else {
  try { fs.closeSync(8); } catch {}
  delete Module._cache[module.filename];
  delete process.mainModule;  // as under node -e: the CommonJS path sets the script's own
}
const file = process.argv[viaEval ? 1 : 2];
const fail = (what) => {
  process.stderr.write('skill-mcp: ' + what + '\n');
  process.exit(1);
};
if (typeof file !== 'string' || !path.isAbsolute(file)) fail('no script path was given to the bootstrap');
let bytes;
try {
  // Up to 16 KiB without fstat, whose Stats object costs node 0.6 M instructions
  // at every start; a larger script goes into a
  // buffer of its own size, the one an ES module's hooks get whole.
  let buf = Buffer.allocUnsafe(16384);
  let off = 0;
  for (let n; off < buf.length && (n = fs.readSync(6, buf, off, buf.length - off, off)) !== 0;)
    off += n;
  if (off === buf.length) {
    const whole = Buffer.allocUnsafe(Math.max(fs.fstatSync(6).size, off));
    buf.copy(whole, 0, 0, off);
    buf = whole;
    for (let n; off < buf.length && (n = fs.readSync(6, buf, off, buf.length - off, off)) !== 0;)
      off += n;
  }
  bytes = buf.subarray(0, off);
  fs.closeSync(6);
} catch (e) {
  fail('could not read the script from its open descriptor: ' + e.message);
}
process.argv = [process.execPath, file, ...process.argv.slice(viaEval ? 2 : 3)];
process.execArgv = [];
const runModule = () => {
  const ext = path.extname(file);
  if (ext !== '' && ext !== '.js' && ext !== '.mjs') {
    fail('unknown file extension "' + ext + '" for ' + file + ' (node runs only .js, .mjs and ' +
         'extensionless files as an ES module entry point)');
  }
  // -e: `require` is gone from the globals by now, and Module is the public 'module'.
  const { register } = viaEval ? Module : require('module');
  if (typeof register !== 'function') {
    fail('ES module scripts need node 20.6 or newer (module.register); this node is ' +
         process.version);
  }
  const url = builtin('url').pathToFileURL(file).href;
  // Only the entry's exact URL is answered here, never stat'ed or realpath'ed, and its
  // bytes are the ones read from fd 6: node's own resolve would follow a swapped path.
  const hooks = `let entry, source;
export function initialize(d) { entry = d.url; source = d.source; }
export async function resolve(s, c, next) {
  return s === entry ? { url: entry, format: 'module', shortCircuit: true } : next(s, c);
}
export async function load(u, c, next) {
  return u === entry ? { format: 'module', source, shortCircuit: true } : next(u, c);
}
//# sourceURL=skill-mcp:entry-hooks`;
  register('data:text/javascript,' + encodeURIComponent(hooks),
                  { data: { url, source: bytes } });
  const unfinished = () => { process.exitCode ??= 13; };
  process.on('exit', unfinished);
  import(url).then(() => process.off('exit', unfinished), (e) => {
    process.off('exit', unfinished);
    throw e;
  });
};
if (file.endsWith('.mjs')) return runModule();
// The nearest package.json's "type" and path, as node 20 finds it: the search stops at a
// node_modules directory; an unreadable file counts as absent, an invalid one fails.
// Inline, not a function: node would parse a function twice (ahead, then when called).
let scope = { type: 'commonjs' };
if (!file.endsWith('.cjs')) {
  scope = { type: 'none' };
  for (let dir = file; ;) {
    const cut = dir.lastIndexOf(path.sep);
    dir = dir.slice(0, cut);
    if (dir.endsWith(path.sep + 'node_modules')) break;
    const pj = dir + path.sep + 'package.json';
    let text;
    // statSync first: cheaper than building a thrown ENOENT at every level.
    if (fs.statSync(pj, { throwIfNoEntry: false })?.isFile()) {
      try { text = fs.readFileSync(pj, 'utf8'); } catch { text = undefined; }
    }
    if (text !== undefined) {
      let type;
      try {
        type = JSON.parse(text.charCodeAt(0) === 0xFEFF ? text.slice(1) : text).type;
      } catch (e) {
        fail('Error parsing ' + pj + ': ' + e.message);
      }
      scope = { type: type === 'module' || type === 'commonjs' ? type : 'none', pj };
      break;
    }
    if (cut <= 0) break;
  }
}
if (scope.type === 'module') return runModule();
let source = bytes.toString('utf8');
if (source.charCodeAt(0) === 0xFEFF) source = source.slice(1);
const m = new Module(file, null);
m.id = '.';
m.filename = file;
m.paths = Module._nodeModulePaths(path.dirname(file));
process.mainModule = m;
Module._cache[file] = m;
if (scope.type === 'commonjs') {
  m._compile(source, file, 'commonjs');
  m.loaded = true;
  return;
}
// No declared type: node 20 runs the file as an ES module when it fails to compile as
// CommonJS because of module syntax. Its compile says so with a warning, emitted
// synchronously, that node itself does not print when it detects. So until the script
// starts (node reads module.exports to call it), that warning is noted and dropped.
let started = false;
let moduleSyntax = false;
const emit = process.emit;
const noteModuleSyntax = function (name, w, ...rest) {
  if (!started && name === 'warning' && String(w?.message).startsWith('To load an ES module')) {
    moduleSyntax = true;
    return false;
  }
  return Reflect.apply(emit, this, [name, w, ...rest]);
};
const emitWasOwn = Object.hasOwn(process, 'emit');
const restoreEmit = () => {
  if (process.emit !== noteModuleSyntax) return;
  if (emitWasOwn) process.emit = emit;
  else delete process.emit;
};
const exportsObject = m.exports;
Object.defineProperty(m, 'exports', {
  configurable: true,
  enumerable: true,
  get() {
    started = true;
    restoreEmit();
    Object.defineProperty(m, 'exports', {
      value: exportsObject, writable: true, enumerable: true, configurable: true,
    });
    return exportsObject;
  },
});
process.emit = noteModuleSyntax;
let compiled = false;
try {
  // 'commonjs': node's own retry here would run an ES module through require(esm).
  m._compile(source, file, 'commonjs');
  compiled = true;
} finally {
  restoreEmit();
  // No catch: an error from the script propagates untouched, with its source arrow. Only
  // a compile error of module syntax (the script never started) is dropped, and the
  // file runs as an ES module, as node 20 does.
  if (!compiled && !started && moduleSyntax) {
    delete Module._cache[file];
    process.mainModule = undefined;
    if (scope.pj && file.endsWith('.js') && !file.includes('/node_modules/')) {
      const url = builtin('url').pathToFileURL(file).href;
      process.emitWarning('Module type of ' + url + ' is not specified and it doesn\'t ' +
          'parse as CommonJS.\nReparsing as ES module because module syntax was detected. ' +
          'This incurs a performance overhead.\nTo eliminate this warning, add "type": ' +
          '"module" to ' + scope.pj + '.', { code: 'MODULE_TYPELESS_PACKAGE_JSON' });
    }
    return runModule();  // eslint-disable-line no-unsafe-finally
  }
}
m.loaded = true;

// Compiled only when called, where the code above is compiled at every start: what
// node -e defines, removed (the -e way only).
function leaveNoEvalTrace() {
  for (const k of ['require', 'module', 'exports', '__filename', '__dirname']) delete globalThis[k];
  delete process._eval;
  for (const k of Module.builtinModules) {
    const d = Object.getOwnPropertyDescriptor(globalThis, k);
    if (d && d.set && !d.enumerable && k !== 'process') delete globalThis[k];
  }
  const globalProto = Object.getPrototypeOf(globalThis);
  Object.defineProperty(globalProto, 'module', {
    configurable: true,
    get() { return undefined; },
    set(v) {
      delete globalProto.module;
      if (v !== Module) globalThis.module = v;
    },
  });
}
})();
)JS";

}  // namespace skillmcp::worker
