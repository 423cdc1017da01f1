// Prints the lines of /proc/self/status that say who this process is and what it
// may do, and the names of its environment variables, as one JSON object. The deploy tests compare them with the run-as user.
'use strict';
const fs = require('node:fs');

const wanted = ['Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb',
  'NoNewPrivs', 'Seccomp'];
const status = {};
for (const line of fs.readFileSync('/proc/self/status', 'utf8').split('\n')) {
  const i = line.indexOf(':');
  if (i > 0 && wanted.includes(line.slice(0, i))) {
    status[line.slice(0, i)] = line.slice(i + 1).trim().split(/\s+/).filter(Boolean);
  }
}
// Names only, never values: the tests check which variables reached the script.
status.envNames = Object.keys(process.env).sort();
process.stdout.write(JSON.stringify(status) + '\n');
