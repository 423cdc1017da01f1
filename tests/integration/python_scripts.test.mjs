// Python skills (docs/configuration.md, "Interpreters"; docs/isolation.md, "python3 and
// the sealed script"): with SKILL_MCP_INTERPRETERS=node,python3 and Debian's own
// /usr/bin/python3 pinned, a skill laid out like the public repositories' (scripts under
// scripts/, importing a sibling, a package beside them and a Debian-packaged library) runs
// through the real server, confirmed, in the same cell as node: the broker as root and as
// uid 65534, namespaces and Landlock on where the host has them. Without the setting the
// answers are the ones a node-only server gives.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { freshDir, removeDir, skillMd } from './fixtures.mjs';
import { BIN, callJson, confirmedRun, connect, launcher } from './lib.mjs';

const PYTHON = '/usr/bin/python3';
const PINNED = realpathSync(PYTHON);
const IS_ROOT = process.getuid() === 0;
const ON = {
  SKILL_MCP_INTERPRETERS: 'node,python3',
  SKILL_MCP_PYTHON3: PYTHON,
  MCP_CONFIRM_MODE: 'auto',
  PROBE_VAR: 'declared value',
};

const FILES = {
  'scripts/helpers.py': "VALUE = 'sibling'\n",
  'scripts/tools/__init__.py': '',
  'scripts/tools/fmt.py': "def shout(s):\n    return s.upper() + '!'\n",
  'scripts/main.py': [
    'import json, os, sys',
    'from helpers import VALUE',
    'from tools.fmt import shout',
    'import six',
    'print(json.dumps({',
    "  'argv': sys.argv, 'file': __file__, 'name': __name__, 'path0': sys.path[0],",
    "  'sibling': VALUE, 'package': shout('pkg'), 'six': six.__file__,",
    "  'env': dict(os.environ), 'executable': sys.executable,",
    "  'isolated': sys.flags.isolated, 'noBytecode': sys.dont_write_bytecode,",
    "  'userSite': sys.flags.no_user_site, 'mainIsModule': sys.modules['__main__'].__dict__ is globals(),",
    "  'globals': sorted(k for k in globals() if k.startswith('_')),",
    '}))',
  ].join('\n') + '\n',
  // Each hostile move, reported rather than raised, so one run shows them all.
  'scripts/hostile.py': [
    'import json, os, sys, subprocess, importlib',
    'out = {}',
    'sys.dont_write_bytecode = False',
    'import helpers',
    "out['pycache'] = os.path.exists(os.path.join(os.path.dirname(__file__), '__pycache__'))",
    'try:',
    "    import planted",
    "    out['pythonpath'] = 'imported'",
    'except ImportError:',
    "    out['pythonpath'] = 'not on sys.path'",
    "out['startupRan'] = 'STARTUP_RAN' in os.environ",
    "out['userSiteOnPath'] = any('.local' in p for p in sys.path)",
    'try:',
    "    os.listdir(os.path.expanduser('~/.local'))",
    "    out['homeLocal'] = 'listed'",
    'except OSError as e:',
    "    out['homeLocal'] = type(e).__name__",
    "child = subprocess.run([sys.executable, '-c', 'import sys; print(sys.flags.isolated)'], capture_output=True, text=True, env={'PATH': '/usr/bin:/bin'})",
    "out['childPython'] = child.stdout.strip() + child.stderr",
    "node = subprocess.run(['node', '-e', 'console.log(1+1)'], capture_output=True, text=True, env={'PATH': '/usr/bin:/bin'})",
    "out['childNode'] = node.stdout.strip() + node.stderr",
    'print(json.dumps(out))',
  ].join('\n') + '\n',
  'scripts/sleepy.py': 'import time\nprint("started", flush=True)\ntime.sleep(30)\n',
  'scripts/loud.py': "import sys\nsys.stdout.write('o' * (2 * 1024 * 1024))\nsys.stderr.write('e' * (1536 * 1024))\n",
  'scripts/hog.py': "b = bytearray(900 * 1024 * 1024)\nprint('allocated', len(b))\n",
  'scripts/boom.py': "print('ran')\nraise ValueError('python boom')\n",
  'scripts/edited.py': "print('first draft')\n",
  'scripts/node_ok.js': "console.log('node still runs');\n",
  // Modules whose source is in the skill, beside bytes that would run in their place in a
  // plain python3: a cached .pyc that is never checked against its source, a native module
  // of the same name, and a .pyc with no source at all (planted in before()).
  'scripts/cached.py': "VALUE = 'source'\n",
  'scripts/native.py': "VALUE = 'source'\n",
  'scripts/planted_bytes.py': [
    'import json',
    'out = {}',
    "for name in ('cached', 'native', 'orphan'):",
    '    try:',
    '        out[name] = __import__(name).VALUE',
    '    except ImportError as e:',
    "        out[name] = 'not found' if isinstance(e, ModuleNotFoundError) else 'ImportError'",
    'print(json.dumps(out))',
  ].join('\n') + '\n',
};

const DECLARATION = [
  'name: pyskill',
  'description: Python scripts laid out like a public skills repository.',
  'mcp-host:',
  '  version: 1',
  '  run:',
  '    - script: scripts/main.py',
  '      interpreter: python3',
  '      env: [PROBE_VAR, LANG]',
  '    - script: scripts/hostile.py',
  '      interpreter: python3',
  '      env: [PYTHONPATH, PYTHONSTARTUP, PYTHONHOME, HOME]',
  '    - script: scripts/sleepy.py',
  '      interpreter: python3',
  '      timeout: 1',
  '    - script: scripts/loud.py',
  '      interpreter: python3',
  '    - script: scripts/hog.py',
  '      interpreter: python3',
  '    - script: scripts/boom.py',
  '      interpreter: python3',
  '    - script: scripts/edited.py',
  '      interpreter: python3',
  '    - script: scripts/planted_bytes.py',
  '      interpreter: python3',
  '    - script: scripts/node_ok.js',
  '      interpreter: node',
].join('\n');

let base;
let skillDir;
let planted;
before(() => {
  base = freshDir('skill-mcp-python-');
  skillDir = join(base, 'skills', 'pyskill');
  for (const [rel, text] of Object.entries({ 'SKILL.md': skillMd(DECLARATION, '\nRun scripts/main.py.\n'), ...FILES })) {
    mkdirSync(dirname(join(skillDir, rel)), { recursive: true });
    writeFileSync(join(skillDir, rel), text);
  }
  // What PYTHONPATH and PYTHONSTARTUP would run, were they honoured.
  planted = join(base, 'planted');
  mkdirSync(planted);
  writeFileSync(join(planted, 'planted.py'), "print('planted module ran')\n");
  writeFileSync(join(planted, 'startup.py'), "import os\nos.environ['STARTUP_RAN'] = '1'\n");
});
after(() => removeDir(base));

// Bytes a plain python3 would import instead of the skill's sources, compiled by this very
// python3 so that only the cell's loader can be why they do not run. Planted anew by each
// test that needs them: another test clears __pycache__.
function plantBytes() {
  const scripts = join(skillDir, 'scripts');
  const evil = join(base, 'evil.py');
  writeFileSync(evil, "VALUE = 'planted bytes'\n");
  const plant = [
    'import sys, py_compile, importlib.machinery as m',
    'evil, scripts = sys.argv[1], sys.argv[2]',
    'tag = sys.implementation.cache_tag',
    "py_compile.compile(evil, cfile=f'{scripts}/__pycache__/cached.{tag}.pyc', dfile=f'{scripts}/cached.py',",
    '                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)',
    "py_compile.compile(evil, cfile=f'{scripts}/orphan.pyc')",
    "open(f'{scripts}/native' + m.EXTENSION_SUFFIXES[0], 'wb').write(b'not an ELF object')",
  ].join('\n');
  const planting = spawnSync(PYTHON, ['-I', '-c', plant, evil, scripts], { encoding: 'utf8' });
  assert.equal(planting.status, 0, planting.stderr);
}

function env(extra = {}) {
  return { SKILLS_DIR: join(base, 'skills'), ...ON, ...extra };
}

async function withServer(extra, asNobody, fn) {
  const conn = await connect({ env: env(extra), ...launcher(asNobody) });
  try {
    return await fn(conn.client, conn);
  } finally {
    await conn.close();
  }
}

async function ran(client, script, args = []) {
  const done = await confirmedRun(client, { name: 'pyskill', script, args });
  assert.equal(done.isError, false, done.text);
  return done.json;
}

test('Debian python3 and a dist-packages library are present (.ci/setup installs them)', () => {
  assert.ok(existsSync(PYTHON), PYTHON);
  assert.ok(existsSync('/usr/lib/python3/dist-packages/six.py'), 'python3-six');
});

describe('SKILL_MCP_INTERPRETERS unset: the answers of a node-only server', () => {
  const off = { SKILL_MCP_INTERPRETERS: undefined, SKILL_MCP_PYTHON3: undefined };
  const reason =
    'The declared interpreter "python3" is not available: this deployment runs scripts only with {node}. ' +
    "The skill's instructions and files still serve.";

  test('a python3 script is unavailable with the same reason, and skill_run refuses it', async () => {
    await withServer(off, false, async (client) => {
      const list = await callJson(client, 'skill_list');
      const skill = list.json.skills.find((s) => s.name === 'pyskill');
      assert.deepEqual(skill.unavailableScripts.find((u) => u.script === 'scripts/main.py'),
        { script: 'scripts/main.py', reason });
      const r = await callJson(client, 'skill_run', { name: 'pyskill', script: 'scripts/main.py' });
      assert.equal(r.isError, true);
      assert.match(r.text, /this deployment runs scripts only with \{node\}/);
    });
  });

  test('a node preview has no interpreterPath: the willRun it always had', async () => {
    await withServer(off, false, async (client) => {
      const p = await callJson(client, 'skill_run', { name: 'pyskill', script: 'scripts/node_ok.js' });
      // (egress: the declared network mode's allowlist, docs/wire.md §6.)
      assert.deepEqual(Object.keys(p.json.preview.willRun),
        ['skill', 'interpreter', 'argv', 'cwd', 'timeoutMs', 'envNames', 'egress']);
    });
  });
});

describe('the interpreter set at boot', () => {
  function doctor(extra) {
    return spawnSync(BIN, ['doctor'], {
      env: { PATH: process.env.PATH, LANG: 'C.UTF-8', SKILL_MCP_WORKER: process.env.SKILL_MCP_WORKER,
             HOME: process.env.HOME ?? '/root', ...extra },
      encoding: 'utf8',
    });
  }

  test('doctor names each pinned interpreter with its version and real path', () => {
    const r = doctor({ SKILL_MCP_INTERPRETERS: 'node,python3', SKILL_MCP_PYTHON3: PYTHON });
    const version = PINNED.split('/').pop().slice('python'.length);
    assert.ok(r.stdout.includes(`python3 ${version} ${PINNED}`), r.stdout);
    assert.match(r.stdout, /runs: on\n {4}the worker and the pinned interpreters are open \(node \//, r.stdout);
  });

  test('a name this server cannot run, or one named twice, stops the boot', () => {
    for (const value of ['node,ruby', 'node,node', 'node,']) {
      const r = doctor({ SKILL_MCP_INTERPRETERS: value });
      assert.notEqual(r.status, 0, value);
      assert.match(r.stderr + r.stdout, /SKILL_MCP_INTERPRETERS=/, value);
    }
  });

  test('a shim, a script or a relative path is refused with the reason, and runs are off', () => {
    const dir = freshDir('skill-mcp-python-shim-');
    try {
      const shim = join(dir, 'python3');
      writeFileSync(shim, '#!/bin/sh\nexec /usr/bin/python3 "$@"\n', { mode: 0o755 });
      const r = doctor({ SKILL_MCP_INTERPRETERS: 'node,python3', SKILL_MCP_PYTHON3: shim });
      assert.match(r.stdout, /runs: off\n {4}python3 cannot be used \(.*is not an ELF executable/, r.stdout);
      const rel = doctor({ SKILL_MCP_INTERPRETERS: 'node,python3', SKILL_MCP_PYTHON3: 'python3' });
      assert.match(rel.stdout, /SKILL_MCP_PYTHON3="python3" is not an absolute path/, rel.stdout);
    } finally {
      removeDir(dir);
    }
  });

  test('the first python3 on PATH is the one pinned when no path is set; a shim there is refused', () => {
    const dir = freshDir('skill-mcp-python-path-');
    try {
      writeFileSync(join(dir, 'python3'), '#!/bin/sh\nexec /usr/bin/python3 "$@"\n', { mode: 0o755 });
      const shimmed = doctor({ SKILL_MCP_INTERPRETERS: 'node,python3', PATH: `${dir}:/usr/bin:/bin` });
      assert.match(shimmed.stdout, /is not an ELF executable \(a shim or wrapper script/, shimmed.stdout);
      const plain = doctor({ SKILL_MCP_INTERPRETERS: 'node,python3', PATH: '/usr/bin:/bin' });
      assert.ok(plain.stdout.includes(PINNED), plain.stdout);
    } finally {
      removeDir(dir);
    }
  });
});

const modes = IS_ROOT ? [['as root', false], ['as uid 65534 (setpriv)', true]] : [['as this user', false]];

for (const [label, asNobody] of modes) {
  describe(`python3 runs, the broker ${label}`, () => {
    const cell = { SKILL_MCP_LANDLOCK: 'auto' };

    test('the preview and the token show and bind the pinned path; the receipt says python3', async () => {
      await withServer(cell, asNobody, async (client) => {
        const p = await callJson(client, 'skill_run', { name: 'pyskill', script: 'scripts/main.py' });
        assert.equal(p.json.status, 'confirmation-required', p.text);
        assert.equal(p.json.preview.willRun.interpreter, 'python3');
        assert.equal(p.json.preview.willRun.interpreterPath, PINNED);
        const done = await callJson(client, 'skill_run',
          { name: 'pyskill', script: 'scripts/main.py', confirmToken: p.json.confirmToken });
        assert.equal(done.json.interpreter, 'python3', done.text);
        assert.equal(done.json.exitCode, 0, done.text);
      });
    });

    test('the confirmation prompt names the pinned binary', async () => {
      let message;
      const conn = await connect({
        env: env({ ...cell, MCP_CONFIRM_MODE: 'ask-user' }),
        ...launcher(asNobody),
        onElicit: (req) => {
          message = req.params.message;
          return { action: 'accept', content: { approve: true } };
        },
      });
      try {
        const r = await callJson(conn.client, 'skill_run', { name: 'pyskill', script: 'scripts/main.py' });
        assert.equal(r.json.exitCode, 0, r.text);
        assert.ok(message.includes(`Interpreter: python3, the binary "${PINNED}"\n`), message);
      } finally {
        await conn.close();
      }
    });

    test('argv, environment, __file__, sys.path[0], a sibling, a package and six import as for python3 <path>', async () => {
      await withServer(cell, asNobody, async (client) => {
        const args = ['plain', 'two words', '-c', '--flag=x', ''];
        const r = await ran(client, 'scripts/main.py', args);
        assert.equal(r.exitCode, 0, r.stderr);
        const out = JSON.parse(r.stdout);
        const main = join(skillDir, 'scripts', 'main.py');
        assert.deepEqual(out.argv, [main, ...args]);
        assert.equal(out.file, main);
        assert.equal(out.name, '__main__');
        assert.equal(out.path0, join(skillDir, 'scripts'));
        assert.equal(out.sibling, 'sibling');
        assert.equal(out.package, 'PKG!');
        assert.equal(out.six, '/usr/lib/python3/dist-packages/six.py');
        assert.equal(out.executable, PINNED);
        // The declared names and the allowlist's set members (docs/wire.md §4), nothing else.
        assert.deepEqual(Object.keys(out.env).sort(), ['HOME', 'LANG', 'PATH', 'PROBE_VAR', 'TMPDIR']);
        assert.equal(out.env.PROBE_VAR, 'declared value');
        assert.equal(out.isolated, 1);
        assert.equal(out.userSite, 1);
        assert.equal(out.noBytecode, true);
        assert.equal(out.mainIsModule, true);
        assert.deepEqual(out.globals,
          ['__annotations__', '__builtins__', '__cached__', '__doc__', '__file__', '__loader__', '__name__',
           '__package__', '__spec__']);
        // The same file under a plain `python3 -E -s <path>` (-I alone would also drop the
        // script's directory from sys.path), from the skill directory: the same answer.
        const plain = spawnSync(PYTHON, ['-B', '-E', '-s', main, ...args], {
          cwd: skillDir, env: out.env,
          encoding: 'utf8',
        });
        assert.equal(plain.status, 0, plain.stderr);
        const bare = JSON.parse(plain.stdout);
        for (const key of ['argv', 'file', 'name', 'path0', 'sibling', 'package', 'six', 'env', 'globals'])
          assert.deepEqual(out[key], bare[key], key);
      });
    });

    test('bytecode, PYTHONPATH, PYTHONSTARTUP, ~/.local and other interpreters get what node scripts get', async () => {
      const hostile = {
        ...cell,
        PYTHONPATH: planted,
        PYTHONSTARTUP: join(planted, 'startup.py'),
        PYTHONHOME: '/nonexistent',
        HOME: base,
      };
      mkdirSync(join(base, '.local', 'lib'), { recursive: true });
      rmSync(join(skillDir, 'scripts', '__pycache__'), { recursive: true, force: true });
      await withServer(hostile, asNobody, async (client) => {
        const r = await ran(client, 'scripts/hostile.py');
        assert.equal(r.exitCode, 0, r.stderr);
        const out = JSON.parse(r.stdout);
        assert.equal(out.pycache, false, 'no __pycache__ beside the script');
        assert.equal(out.pythonpath, 'not on sys.path');
        assert.equal(out.startupRan, false);
        assert.equal(out.userSiteOnPath, false);
        assert.equal(out.childPython, '0', `a child python is an ordinary python, as a node child is node: ${r.stdout}`);
        assert.equal(out.childNode, '2', r.stdout);
      });
      assert.deepEqual(readdirSync(join(skillDir, 'scripts')).filter((n) => n === '__pycache__'), []);
    });

    test('the skill\'s modules run from their sources: no planted .pyc, sourceless .pyc or native module', async () => {
      plantBytes();
      // Positive control: a plain python3 in the same directory takes the planted bytes.
      const bare = spawnSync(PYTHON, ['-B', 'planted_bytes.py'],
        { cwd: join(skillDir, 'scripts'), encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
      assert.equal(bare.status, 0, bare.stderr);
      assert.deepEqual(JSON.parse(bare.stdout), { cached: 'planted bytes', native: 'ImportError', orphan: 'planted bytes' });
      await withServer(cell, asNobody, async (client) => {
        const r = await ran(client, 'scripts/planted_bytes.py');
        assert.equal(r.exitCode, 0, r.stderr);
        assert.deepEqual(JSON.parse(r.stdout), { cached: 'source', native: 'source', orphan: 'not found' });
      });
    });

    test('an uncaught exception prints from the script\'s own frame and exits 1', async () => {
      await withServer(cell, asNobody, async (client) => {
        const r = await ran(client, 'scripts/boom.py');
        assert.equal(r.exitCode, 1);
        assert.equal(r.stdout, 'ran\n');
        const main = join(skillDir, 'scripts', 'boom.py');
        assert.equal(r.stderr,
          `Traceback (most recent call last):\n  File "${main}", line 2, in <module>\n` +
          "    raise ValueError('python boom')\nValueError: python boom\n");
      });
    });

    test('a script changed after the preview is DRAFT_CHANGED and the new bytes never run', async () => {
      const path = join(skillDir, 'scripts', 'edited.py');
      writeFileSync(path, "print('first draft')\n");
      try {
        await withServer(cell, asNobody, async (client) => {
          const call = { name: 'pyskill', script: 'scripts/edited.py' };
          const p = await callJson(client, 'skill_run', call);
          writeFileSync(path, "print('second draft')\n");
          const r = await callJson(client, 'skill_run', { ...call, confirmToken: p.json.confirmToken });
          assert.equal(r.isError, true, r.text);
          assert.equal(r.json.error, 'DRAFT_CHANGED', r.text);
        });
      } finally {
        writeFileSync(path, "print('first draft')\n");
      }
    });

    test('the timeout, the output caps and the memory limit hold', async () => {
      await withServer({ ...cell, SKILL_MCP_LIMIT_DATA_MB: '256' }, asNobody, async (client) => {
        const slow = await ran(client, 'scripts/sleepy.py');
        assert.equal(slow.timedOut, true);
        assert.equal(slow.stdout, 'started\n');
        const loud = await ran(client, 'scripts/loud.py');
        assert.deepEqual(loud.truncated, { stdout: true, stderr: true });
        const hog = await ran(client, 'scripts/hog.py');
        assert.notEqual(hog.exitCode, 0, hog.stdout);
        assert.match(hog.stderr, /MemoryError/);
      });
    });

    test('node runs as before beside it', async () => {
      await withServer(cell, asNobody, async (client) => {
        const r = await ran(client, 'scripts/node_ok.js');
        assert.equal(r.stdout, 'node still runs\n');
        assert.equal(r.interpreter, 'node');
      });
    });
  });
}
