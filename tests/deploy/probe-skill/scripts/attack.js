'use strict';
// The attacker of the deploy tests' hostile probe: from its own run, tries to read the
// environment of process argv[2] (another connection's run, holding CELL_SECRET), to
// kill it, and to read the operator's environment file argv[3]. Prints what each attempt got:
// "read"/"sent" means the attack worked, an error code that it was refused.
const fs = require('node:fs');
const pid = Number(process.argv[2]);
const out = { uid: process.getuid() };
try {
  out.environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes('CELL_SECRET=') ? 'read' : 'no-secret';
} catch (e) {
  out.environ = e.code;
}
try {
  process.kill(pid, 'SIGKILL');
  out.kill = 'sent';
} catch (e) {
  out.kill = e.code;
}
try {
  fs.readFileSync(process.argv[3] ?? '/etc/skill-mcp/skill-mcp.env');
  out.envFile = 'read';
} catch (e) {
  out.envFile = e.code;
}
console.log(JSON.stringify(out));
