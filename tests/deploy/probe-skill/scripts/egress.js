'use strict';
// The network of a declared run, for the deploy tests: argv[2] is JSON {key: [op, arg]};
// tries each and prints {key: outcome}.
//   ["http", URL]        GET with node's own http client (its resolver, no proxy): the
//                        body, or the error code
//   ["lookup", NAME]     the run's resolver: "resolved", or the error code (ENOTFOUND)
//   ["tcp", "HOST:PORT"] a plain TCP connect: "connected", or the error code
const dns = require('node:dns');
const http = require('node:http');
const net = require('node:net');

// Every attempt is bounded: a refusal must come at once, and a hang shows as "timeout".
const bounded = (start) => new Promise((resolve) => {
  const timer = setTimeout(() => resolve('timeout'), 10_000);
  start((outcome) => { clearTimeout(timer); resolve(outcome); });
});

const get = (url) => bounded((done) => {
  http.get(url, (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c) => (body += c));
    res.on('end', () => done(body));
  }).on('error', (e) => done(e.code ?? e.message));
});
const lookup = (name) => bounded((done) => dns.lookup(name, (e) => done(e ? e.code : 'resolved')));
const tcp = (target) => bounded((done) => {
  const at = target.lastIndexOf(':');
  const s = net.connect({ host: target.slice(0, at), port: Number(target.slice(at + 1)) });
  s.on('connect', () => { s.destroy(); done('connected'); });
  s.on('error', (e) => done(e.code ?? e.message));
});

(async () => {
  const out = {};
  for (const [key, [op, arg]] of Object.entries(JSON.parse(process.argv[2] ?? '{}'))) {
    out[key] = op === 'http' ? await get(arg)
      : op === 'lookup' ? await lookup(arg)
      : op === 'tcp' ? await tcp(arg)
      : 'bad op';
  }
  console.log(JSON.stringify(out));
})();
