'use strict';
// The doors of the deploy tests: argv[2] is JSON {key: [op, arg]}; tries each and prints
// {key: outcome}. "connected"/"changed" means the door opened, an error code that it was
// shut. "own-socket" (a socket of the run's own, in its TMPDIR) and "pipe" (node's own
// pipes) are the positive controls: what is the run's own must keep working.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const connectTo = (p) => new Promise((resolve) => {
  let s;
  try { s = net.connect({ path: p }); } catch (e) { resolve(e.code); return; }
  s.on('connect', () => { s.destroy(); resolve('connected'); });
  s.on('error', (e) => resolve(e.code));
});
const ownSocket = () => new Promise((resolve) => {
  const p = path.join(process.env.TMPDIR, 'own.sock');
  const server = net.createServer((c) => c.destroy());
  server.on('error', (e) => resolve(e.code));
  server.listen(p, async () => { const r = await connectTo(p); server.close(); resolve(r); });
});
const attempt = (fn) => { try { fn(); return 'changed'; } catch (e) { return e.code; } };

(async () => {
  const out = { uid: process.getuid() };
  for (const [key, [op, arg]] of Object.entries(JSON.parse(process.argv[2] ?? '{}'))) {
    out[key] = op === 'connect' ? await connectTo(arg)
      : op === 'own-socket' ? await ownSocket()
      : op === 'pipe' ? attempt(() => execFileSync(process.execPath, ['-e', '0']))
      : op === 'chmod' ? attempt(() => fs.chmodSync(arg, 0o600))
      : op === 'write' ? attempt(() => fs.writeFileSync(arg, 'by a run'))
      : 'bad op';
  }
  console.log(JSON.stringify(out));
})();
