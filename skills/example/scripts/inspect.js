// Prints, as one JSON object on stdout, what this process was started with:
// its arguments, its working directory, the NAMES of its environment variables
// (never their values) and the optional greeting. It touches no file.
'use strict';

const names = Object.keys(process.env).sort();
const greeting = process.env.EXAMPLE_GREETING;

const report = {
  skill: 'example',
  argv: process.argv.slice(2),
  cwd: process.cwd(),
  envNames: names,
  greeting: typeof greeting === 'string' && greeting.trim() !== '' ? greeting : null,
  node: process.version,
  pid: process.pid,
  uid: typeof process.getuid === 'function' ? process.getuid() : null,
};

process.stdout.write(JSON.stringify(report, null, 2) + '\n');
