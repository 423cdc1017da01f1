// Judges a declared run from mcp-session.mjs (the report on stdin; the run was
// scripts/egress.js) against expectations given as JSON in argv[2]. Prints one
// "ok"/"not ok" line per check; exits 1 on any failure.
//   expect: { willRun: [{host, ports}],        // the preview's willRun.egress, exactly
//             outcomes: {key: "value" | "/regex/"},  // what egress.js printed, per attempt
//             hosts: [{host, port}],           // receipt: connected, bytes both ways
//             refused: [{kind, target}] }      // receipt: each of these refusals recorded
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(0, 'utf8'));
const expect = JSON.parse(process.argv[2] ?? '{}');
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}${ok || !detail ? '' : `: ${detail}`}`);
  if (!ok) failures += 1;
}
const show = (v) => JSON.stringify(v)?.slice(0, 1500);
const matches = (want, got) => (typeof want === 'string' && /^\/.*\/$/.test(want)
  ? typeof got === 'string' && new RegExp(want.slice(1, -1)).test(got)
  : got === want);

check(!report.error, 'the session completed', `${report.error}\nserver stderr:\n${report.stderr}`);
for (const [name, why] of Object.entries(report.stepErrors ?? {})) check(false, `step ${name}`, why);

const preview = report.preview?.json?.preview;
check(JSON.stringify(preview?.willRun?.egress) === JSON.stringify(expect.willRun),
  `the preview names the hosts the run may reach: ${show(expect.willRun)}`, show(preview?.willRun ?? preview));

const receipt = report.receipt?.json;
check(!report.receipt?.isError && receipt?.exitCode === 0, 'the confirmed run ran (exit 0)', show(report.receipt));
let seen;
try {
  seen = JSON.parse(receipt?.stdout ?? '');
} catch {
  seen = undefined;
}
for (const [key, want] of Object.entries(expect.outcomes ?? {})) {
  check(matches(want, seen?.[key]), `${key}: ${want}`, `got ${show(seen?.[key])} (${show(seen ?? receipt)})`);
}
const egress = receipt?.egress;
for (const { host, port } of expect.hosts ?? []) {
  const h = egress?.hosts?.find((e) => e.host === host && e.port === port);
  check(h !== undefined && h.connections >= 1 && h.bytesOut > 0 && h.bytesIn > 0,
    `the receipt counts the connection to ${host}:${port} and its bytes both ways`, show(egress));
}
for (const { kind, target } of expect.refused ?? []) {
  check(egress?.refused?.some((r) => r.kind === kind && r.target === target) === true,
    `the receipt records the refused ${kind} attempt at ${target}`, show(egress));
}
console.log(failures === 0 ? 'PASS' : `FAIL: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
