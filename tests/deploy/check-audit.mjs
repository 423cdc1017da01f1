// Judges the audit records of a deploy test (docs/audit.md).
//   node check-audit.mjs journal '<expect>' <journalctl -o json output
//   node check-audit.mjs stderr '<expect>'  <mcp-session.mjs report (its stderr)
// expect: {outcomes: [...] in order, every: {FIELD: value} on each record, ran: {FIELD: value
// or "/regex/"} on each ran record, absent: [strings that must appear nowhere in the input]}.
// Prints "ok - ..." or "not ok - ..." lines; exits 1 on any failure.
import { readFileSync } from 'node:fs';

const [mode, expectText] = process.argv.slice(2);
const expect = JSON.parse(expectText);
const input = readFileSync(0, 'utf8');
// Where the records are: the journal's output, or the container's stderr (the report
// also holds the run's own answer, which is not the records' business).
let records;
let text = input;
if (mode === 'journal') {
  records = input.split('\n').filter(Boolean).map((l) => JSON.parse(l));
} else {
  text = String(JSON.parse(input).stderr ?? '');
  records = text.split('\n')
    .filter((l) => l.startsWith('{"skill_mcp_audit":1,')).map((l) => JSON.parse(l));
}
let failed = false;
const check = (ok, what) => {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) failed = true;
};
const matches = (value, want) =>
  typeof want === 'string' && want.startsWith('/') && want.endsWith('/')
    ? new RegExp(want.slice(1, -1)).test(String(value))
    : String(value) === String(want);

const outcomes = records.map((r) => r.SKILL_MCP_OUTCOME);
check(JSON.stringify(outcomes) === JSON.stringify(expect.outcomes),
  `audit records ${JSON.stringify(outcomes)}, want ${JSON.stringify(expect.outcomes)}`);
for (const [i, r] of records.entries()) {
  for (const [k, v] of Object.entries(expect.every ?? {}))
    check(matches(r[k], v), `record ${i}: ${k}=${r[k]} (want ${v})`);
  check(/^[0-9a-f]{32}$/.test(r.MESSAGE_ID ?? ''), `record ${i}: MESSAGE_ID ${r.MESSAGE_ID}`);
  if (r.SKILL_MCP_OUTCOME !== 'ran') continue;
  for (const [k, v] of Object.entries(expect.ran ?? {}))
    check(matches(r[k], v), `record ${i} (ran): ${k}=${r[k]} (want ${v})`);
}
for (const s of expect.absent ?? []) check(s !== '' && !text.includes(s), `"${s.slice(0, 12)}..." appears nowhere in the records`);
process.exit(failed ? 1 : 0);
