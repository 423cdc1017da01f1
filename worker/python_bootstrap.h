// The fixed program python3 runs first: ours, never the skill's. The worker starts
// (worker/exec.h):
//
//   <pinned real path> -I -B -X frozen_modules=on -c <this> <script real path> <args...>
//
// - -I (isolated): no user site directory, no PYTHON* variable honoured (PYTHONPATH,
//   PYTHONSTARTUP, PYTHONHOME, PYTHONINSPECT...), and nothing of the cwd on sys.path; the
//   system's site-packages and dist-packages stay, as for `python3 -I script.py`.
// - -B: no bytecode is written (the skill is read-only in the cell anyway; a write that
//   fails is silent in Python, but one that succeeded into MCP_DATA_DIR or the scratch
//   directory would outlive the check of the bytes the user confirmed).
// - -X frozen_modules=on: the startup modules come from the binary, whatever the build's
//   default, not from .py files a prefix could hold.
// - argv[0] is the pinned binary's real path: python3 finds its prefix and stdlib from it
//   and sets sys.executable to it (worker/exec.h, BuildArgv).
// - The path and the arguments come after -c's program, so python only stores them in
//   sys.argv; a file named like an option is never parsed as one.
// - The bytes come from fd 6 (pread from offset 0, whatever the broker's offset), then fd 6
//   is closed. They are compiled with the script's real path as the file name (so a
//   traceback, a coding declaration and a BOM behave as for `python3 script.py`) and run in
//   a fresh __main__ module: __name__ "__main__", __file__ the real path, __cached__ None,
//   __loader__ a source loader for that path, __spec__ and __package__ None, the module
//   becomes sys.modules["__main__"]. sys.argv becomes [path, args...] and sys.path[0] the
//   script's directory (which -I alone would leave out: it implies -P), so
//   `from helpers import x` and a package beside the script import as for
//   `python3 -E -s script.py`. The path is never opened to run it: a script swapped after
//   the broker's check never runs.
// - A module imported from the skill's own directories (the cwd, where the worker entered
//   the skill, and beneath it) is compiled from its .py source alone: a .pyc in
//   __pycache__ (python reads those even with -B, an unchecked-hash one whatever the
//   source says), a sourceless .pyc and a native module of the same name never load in
//   place of the source a reader of the skill sees. Everything else (the stdlib,
//   dist-packages) imports as python imports it, cached bytecode included.
// - An uncaught exception is printed by sys.excepthook from the script's own frame (the
//   bootstrap's frames are cut) and exits 1; a syntax error is printed as python prints
//   it (a NUL in the source is refused as compile() refuses it, exit 1, where python3 on
//   a file would stop reading there); SystemExit and KeyboardInterrupt pass through
//   untouched.
// - Nothing of the bootstrap stays in the script's namespace: its names live in a function
//   that the original __main__ (no longer in sys.modules) holds.
// Why -c and not a file: python runs a path by opening it again; -c takes the program as
// an argument, the way node's -e fallback does (worker/node_bootstrap.h).
#pragma once

namespace skillmcp::worker {

inline constexpr char kPythonBootstrap[] = R"PY(def _skill_mcp_run():
    import sys, os
    def fail(what):
        sys.stderr.write('skill-mcp: ' + what + '\n')
        raise SystemExit(1)
    if len(sys.argv) < 2 or not sys.argv[1].startswith('/'):
        fail('no script path was given to the bootstrap')
    path = sys.argv[1]
    chunks = []
    try:
        off = 0
        while True:
            chunk = os.pread(6, 1 << 20, off)
            if not chunk:
                break
            chunks.append(chunk)
            off += len(chunk)
        os.close(6)
    except OSError as e:
        fail('could not read the script from its open descriptor: ' + str(e))
    del sys.argv[0]
    sys.path.insert(0, os.path.dirname(path))
    ext = sys.modules['_frozen_importlib_external']
    skill = os.path.realpath(os.getcwd())
    class SourceOnly(ext.SourceFileLoader):
        def get_code(self, fullname):
            source = self.get_filename(fullname)
            return self.source_to_code(self.get_data(source), source)
    def skill_finder(entry):
        real = os.path.realpath(entry or '.')
        if real != skill and not real.startswith(skill + '/'):
            raise ImportError('not a directory of the skill')
        return ext.FileFinder(entry, (SourceOnly, ext.SOURCE_SUFFIXES))
    sys.path_hooks.insert(0, skill_finder)
    sys.path_importer_cache.clear()
    main = type(sys)('__main__')
    main.__file__ = path
    main.__cached__ = None
    main.__annotations__ = {}
    main.__builtins__ = sys.modules['builtins']
    main.__loader__ = sys.modules['_frozen_importlib_external'].SourceFileLoader('__main__', path)
    sys.modules['__main__'] = main
    try:
        code = compile(b''.join(chunks), path, 'exec', dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        sys.excepthook(type(e), e.with_traceback(None), None)
        raise SystemExit(1)
    del chunks
    try:
        exec(code, main.__dict__)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code is not code:
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        raise SystemExit(1)
_skill_mcp_run()
)PY";

}  // namespace skillmcp::worker
