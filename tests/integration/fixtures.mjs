// Builds, in a fresh temporary directory, real skill trees holding every problem kind
// of docs/wire.md §3 (except environ-unscrubbed, which needs a kernel that refuses the
// wipe) and the good cases next to them. Nothing is mocked: these are files,
// directories, FIFOs and symlinks the server discovers at boot.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const MiB = 1024 * 1024;

function write(path, content, mode) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  if (mode !== undefined) chmodSync(path, mode);
}

function mkfifo(path) {
  mkdirSync(dirname(path), { recursive: true });
  execFileSync('mkfifo', [path]);
}

/** A SKILL.md text from a frontmatter body (string) and a markdown body. */
export function skillMd(frontmatter, body) {
  return `---\n${frontmatter.trimEnd()}\n---\n${body}`;
}

/** A fresh, world-readable temp dir (a worker may run as another uid). */
export function freshDir(prefix = 'skill-mcp-it-') {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  chmodSync(dir, 0o755);
  return dir;
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
}

// Node script used by run tests: appends one line to the marker file named by
// argv[2] (so a test can see whether, and how often, anything ran), prints what it
// saw as JSON, writes a line on stderr, and exits with argv[3] (default 0).
export const MARK_JS = `'use strict';
const fs = require('node:fs');
const [marker, code] = process.argv.slice(2);
if (marker) fs.appendFileSync(marker, 'ran ' + process.pid + '\\n');
process.stdout.write(JSON.stringify({
  argv: process.argv.slice(2),
  cwd: process.cwd(),
  envNames: Object.keys(process.env).sort(),
  markVar: process.env.MARK_VAR === undefined ? null : 'set',
}) + '\\n');
process.stderr.write('mark.js wrote to stderr\\n');
process.exit(code === undefined ? 0 : Number(code));
`;

// Node script that tries to read the server it was started by: the parent's
// /proc environ block and its memory. Prints what it managed as JSON.
export const PROBE_JS = `'use strict';
const fs = require('node:fs');
const out = { ppid: process.ppid };
try {
  out.environ = fs.readFileSync('/proc/' + process.ppid + '/environ').toString('latin1');
} catch (e) {
  out.environError = e.code;
}
try {
  const fd = fs.openSync('/proc/' + process.ppid + '/mem', 'r');
  out.mem = 'opened';
  fs.closeSync(fd);
} catch (e) {
  out.mem = e.code;
}
process.stdout.write(JSON.stringify(out) + '\\n');
`;

/**
 * The discovery tree. Returns the absolute paths the tests assert against.
 *   rootA: the good skill, one skill per problem kind, the symlink cases
 *   rootB: the other half of duplicate-name, and a heavy skill (5 x 1 MiB)
 *   missingRoot / fileRoot: root-unreadable
 *   manyRoot: 34 skills (skill-limit), started separately
 */
export function buildDiscoveryTree() {
  const base = freshDir();
  const rootA = join(base, 'rootA');
  const rootB = join(base, 'rootB');
  const outside = join(base, 'outside');
  const manyRoot = join(base, 'many');
  const missingRoot = join(base, 'does-not-exist');
  const fileRoot = join(base, 'plain-file.txt');
  write(fileRoot, 'a root that is a regular file\n');

  // Outside every root: targets of the escaping links.
  write(join(outside, 'secret-skill', 'SKILL.md'), skillMd('name: secret-skill\ndescription: must never be served', '\nsecret body\n'));
  write(join(outside, 'secret.txt'), 'TOP SECRET outside the root\n');

  // --- the good skill ---
  const good = join(rootA, 'good');
  const goodMd = skillMd(
    [
      'name: good',
      'description: A well-formed skill used by the read-tool tests.',
      'when-to-use: When a test needs a skill that has everything.',
      'mcp-host:',
      '  version: 1',
      '  run:',
      '    - script: scripts/hello.js',
      '      interpreter: node',
      '      env: [GOOD_VAR]',
      '      timeout: 5',
      '    - script: scripts/tool.py',
      '      interpreter: python',
      '  egress: [api.example.invalid]',
    ].join('\n'),
    '\n# Good\n\nRead `references/guide.md` with skill_file before anything else.\n\nTrailing spaces stay:   \n',
  );
  write(join(good, 'SKILL.md'), goodMd);
  write(join(good, 'references', 'guide.md'), '# Guide\n\nÜnïcödé text stays text.\n');
  write(join(good, 'references', 'data.json'), '{"a":1}\n');
  write(join(good, 'scripts', 'hello.js'), "process.stdout.write('hello\\n');\n");
  write(join(good, 'scripts', 'tool.py'), "print('python is not runnable in v1')\n");
  write(join(good, 'assets', 'blob.bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe]));
  write(join(good, 'assets', 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00]));
  write(join(good, 'assets', 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])); // "café" in Latin-1: not UTF-8
  const bigSize = MiB + MiB / 2;
  write(join(good, 'assets', 'big.txt'), Buffer.alloc(bigSize, 'x'));
  mkfifo(join(good, 'docs', 'pipe.fifo'));
  symlinkSync('/etc/passwd', join(good, 'docs', 'passwd-link'));
  symlinkSync('../references/guide.md', join(good, 'docs', 'inner-link.md'));

  // no-skill-md: a directory with no SKILL.md
  write(join(rootA, 'no-md', 'README.txt'), 'not a skill\n');
  // unreadable-skill-md: SKILL.md as a FIFO (a read would block forever) and as a directory
  mkfifo(join(rootA, 'fifo-md', 'SKILL.md'));
  mkdirSync(join(rootA, 'dir-md', 'SKILL.md'), { recursive: true });
  // malformed-frontmatter
  write(join(rootA, 'malformed', 'SKILL.md'), skillMd('name: malformed\ndescription: [unclosed', '\nbody\n'));
  // A skill in rootA whose `mcp-host:` block is `hostLines`, bundling scripts/run.js.
  const declSkill = (name, description, hostLines, body) => {
    write(join(rootA, name, 'SKILL.md'),
          skillMd([`name: ${name}`, `description: ${description}`, 'mcp-host:', ...hostLines].join('\n'), body));
    write(join(rootA, name, 'scripts', 'run.js'), 'process.exit(0);\n');
  };
  // declaration: unknown keys (skill keeps its instructions)
  declSkill('decl-unknown', 'Declaration with unknown keys.', [
    '  version: 1',
    '  colour: blue',
    '  run:',
    '    - script: scripts/run.js',
    '      interpreter: node',
    '      flavour: vanilla',
  ], '\nunknown keys body\n');
  // declaration: an anchor and an alias inside the block
  declSkill('decl-anchor', 'Declaration using an anchor.', [
    '  version: 1',
    '  run:',
    '    - &entry',
    '      script: scripts/run.js',
    '      interpreter: node',
    '    - *entry',
  ], '\nanchor body\n');
  // declaration: an unknown major version
  declSkill('decl-v2', 'Declaration from the future.', [
    '  version: 2',
    '  run:',
    '    - script: scripts/run.js',
    '      interpreter: node',
  ], '\nversion two body\n');
  // duplicate-name: "dup" in both roots
  write(join(rootA, 'dup', 'SKILL.md'), skillMd('name: dup\ndescription: dup in A', '\nA\n'));
  write(join(rootB, 'dup', 'SKILL.md'), skillMd('name: dup\ndescription: dup in B', '\nB\n'));
  // name-mismatch
  write(join(rootA, 'mismatch', 'SKILL.md'), skillMd('name: someone-else\ndescription: Claims another name.', '\nmismatch body\n'));
  // unusable-name
  write(join(rootA, 'bad name!', 'SKILL.md'), skillMd('name: bad\ndescription: unaddressable directory', '\nbad\n'));
  // declared-script-missing
  write(
    join(rootA, 'missing-script', 'SKILL.md'),
    skillMd(
      [
        'name: missing-script',
        'description: Declares a script it does not bundle.',
        'mcp-host:',
        '  version: 1',
        '  run:',
        '    - script: scripts/gone.js',
        '      interpreter: node',
      ].join('\n'),
      '\nmissing body\n',
    ),
  );
  // symlink-escape: a skill directory link out of the root
  symlinkSync(join(outside, 'secret-skill'), join(rootA, 'escape-link'));
  // unusable-path: names the read tools cannot address
  const odd = join(rootA, 'oddpaths');
  write(join(odd, 'SKILL.md'), skillMd('name: oddpaths\ndescription: Files with unaddressable names.', '\nodd\n'));
  write(join(odd, 'ok.txt'), 'fine\n');
  write(join(odd, 'a\\b.txt'), 'backslash\n');
  write(join(odd, '100%41.txt'), 'percent escape\n');
  // file-limit: 2001 files besides SKILL.md
  const many = join(rootA, 'many-files');
  write(join(many, 'SKILL.md'), skillMd('name: many-files\ndescription: Too many files.', '\nmany\n'));
  mkdirSync(join(many, 'data'));
  for (let i = 0; i < 2001; i += 1) writeFileSync(join(many, 'data', `f${String(i).padStart(4, '0')}.txt`), 'x');
  // symlinked skill dir inside the root: served under the TARGET's name
  write(
    join(rootA, 'shared', 'linked-target', 'SKILL.md'),
    skillMd('name: alias\ndescription: Reached through skills/alias.', '\nlinked body\n'),
  );
  mkdirSync(join(rootA, 'skills'));
  symlinkSync('../shared/linked-target', join(rootA, 'skills', 'alias'));
  // the same directory reached twice (directly and through a link): one skill
  symlinkSync('../good', join(rootA, 'skills', 'good-again'));

  // heavy: five files of exactly 1 MiB (4 MiB call budget)
  const heavy = join(rootB, 'heavy');
  write(join(heavy, 'SKILL.md'), skillMd('name: heavy\ndescription: Large files.', '\nheavy\n'));
  for (let i = 1; i <= 5; i += 1) write(join(heavy, `part${i}.txt`), Buffer.alloc(MiB, String(i)));
  write(join(heavy, 'small.txt'), 'small\n');

  // huge-md: a SKILL.md over the 262144-byte read cap
  const hugeBody = `\n# Huge\n\n${'0123456789abcdef\n'.repeat(20000)}`;
  write(join(rootB, 'huge-md', 'SKILL.md'), skillMd('name: huge-md\ndescription: Over the cap.', hugeBody));

  // skill-limit: 34 well-formed skills in their own tree
  for (let i = 0; i < 34; i += 1) {
    const name = `s${String(i).padStart(2, '0')}`;
    write(join(manyRoot, name, 'SKILL.md'), skillMd(`name: ${name}\ndescription: skill ${name}`, `\n${name}\n`));
  }

  return {
    base,
    rootA,
    rootB,
    outside,
    manyRoot,
    missingRoot,
    fileRoot,
    good,
    goodMd,
    bigSize,
    heavy,
    hugeBody,
    dirs: {
      noMd: join(rootA, 'no-md'),
      fifoMd: join(rootA, 'fifo-md'),
      dirMd: join(rootA, 'dir-md'),
      malformed: join(rootA, 'malformed'),
      declUnknown: join(rootA, 'decl-unknown'),
      declAnchor: join(rootA, 'decl-anchor'),
      declV2: join(rootA, 'decl-v2'),
      dupA: join(rootA, 'dup'),
      dupB: join(rootB, 'dup'),
      mismatch: join(rootA, 'mismatch'),
      badName: join(rootA, 'bad name!'),
      missingScript: join(rootA, 'missing-script'),
      escapeLink: join(rootA, 'escape-link'),
      oddpaths: odd,
      manyFiles: many,
      linkedTarget: join(rootA, 'shared', 'linked-target'),
      aliasLink: join(rootA, 'skills', 'alias'),
    },
  };
}

/**
 * The run tree: skills whose declared node script writes a marker file, so a test
 * can tell whether anything ran. Two skills with the same script (changing the skill
 * keeps everything else equal), a second declared script, an env declaration and a
 * python script.
 */
export function buildRunTree() {
  const base = freshDir('skill-mcp-run-');
  const root = join(base, 'skills');
  const markers = join(base, 'markers');
  mkdirSync(markers);
  // The script may run as another, unprivileged uid: let it write its marker.
  chmodSync(markers, 0o1777);
  const declaration = (name) =>
    [
      `name: ${name}`,
      `description: Writes a marker file when it runs (${name}).`,
      'mcp-host:',
      '  version: 1',
      '  run:',
      '    - script: scripts/mark.js',
      '      interpreter: node',
      '      env: [MARK_VAR, MARK_UNSET]',
      '      timeout: 5',
      '    - script: scripts/other.js',
      '      interpreter: node',
      '      timeout: 5',
      '    - script: scripts/probe.js',
      '      interpreter: node',
      '      timeout: 5',
      '    - script: scripts/loud.js',
      '      interpreter: node',
      '      timeout: 10',
      '    - script: scripts/detach.js',
      '      interpreter: node',
      '      timeout: 5',
      '    - script: scripts/slow.js',
      '      interpreter: node',
      '      timeout: 2',
      '    - script: scripts/tool.py',
      '      interpreter: python',
    ].join('\n');
  for (const name of ['marker', 'marker2']) {
    const dir = join(root, name);
    write(join(dir, 'SKILL.md'), skillMd(declaration(name), `\nRun scripts/mark.js.\n`));
    write(join(dir, 'scripts', 'mark.js'), MARK_JS);
    write(join(dir, 'scripts', 'other.js'), MARK_JS);
    write(join(dir, 'scripts', 'undeclared.js'), MARK_JS);
    write(join(dir, 'scripts', 'tool.py'), 'print(1)\n');
    write(join(dir, 'scripts', 'probe.js'), PROBE_JS);
    // 2 MiB on stdout, 1.5 MiB on stderr: both over the 1 MiB capture.
    write(join(dir, 'scripts', 'loud.js'), "process.stdout.write('o'.repeat(2 * 1024 * 1024)); process.stderr.write('e'.repeat(1536 * 1024));\n");
    // Leaves a detached grandchild holding stdout/stderr open for 30 s, then exits 0.
    write(
      join(dir, 'scripts', 'detach.js'),
      "const { spawn } = require('node:child_process');\n" +
        "const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });\n" +
        "c.on('error', () => {});\n" +
        "process.stdout.write(JSON.stringify({ spawned: c.pid !== undefined }) + '\\n');\n" +
        "c.unref();\n",
    );
    // Writes its marker, then outlives its 2 s budget.
    write(join(dir, 'scripts', 'slow.js'), `require('node:fs').appendFileSync(process.argv[2], 'ran\\n'); setTimeout(() => {}, 60000);\n`);
  }
  execFileSync('chmod', ['-R', 'a+rX', base]);
  return { base, root, markers, marker: join(root, 'marker'), marker2: join(root, 'marker2') };
}
