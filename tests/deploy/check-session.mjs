// Judges a report from mcp-session.mjs (read on stdin) against expectations given
// as JSON in argv[2]. Prints one "ok"/"not ok" line per check; exits 1 on any failure.
//   expect: { skills?: [names that must be listed],
//             load?: "skill", file?: "expected text fragment",
//             run?: { uid, gid?, envNames?, tokenGiven?, boundingWithin?, boundingEmpty? } // the probe's view;
//                                  tokenGiven: the session used a token from elsewhere
//             previewOnly?: true, rejected?: "TOKEN_INVALID" (the token call's error),
//             broker?: { uid: "<service uid>", capEff: "<hex>" } } // from inspect
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(0, 'utf8'));
const expect = JSON.parse(process.argv[2] ?? '{}');
let failures = 0;
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}${ok || !detail ? '' : `: ${detail}`}`);
  if (!ok) failures += 1;
}
const show = (v) => JSON.stringify(v)?.slice(0, 1500);

check(!report.error, 'the session completed', `${report.error}\nserver stderr:\n${report.stderr}`);
for (const [name, why] of Object.entries(report.stepErrors ?? {})) check(false, `step ${name}`, why);
check(report.serverInfo?.name === 'skill-mcp', 'initialize answered as skill-mcp', show(report.serverInfo));
for (const t of ['skill_list', 'skill_load', 'skill_file', 'skill_run']) {
  check(report.tools?.includes(t), `tools/list has ${t}`, show(report.tools));
}
const names = (report.list?.json?.skills ?? []).map((s) => s.name);
for (const s of expect.skills ?? []) check(names.includes(s), `skill_list lists ${s}`, show(report.list));

if (expect.load) {
  const j = report.load?.json;
  check(!report.load?.isError && typeof j?.body === 'string' && j.body.length > 0 && Array.isArray(j.files),
    `skill_load ${expect.load} returns its body and manifest`, show(report.load));
}
if (expect.file) {
  const e = report.file?.json?.files?.[0];
  check(!report.file?.isError && typeof e?.content === 'string' && e.content.includes(expect.file),
    'skill_file returns the file text', show(report.file));
}
if ((expect.run && !expect.run.tokenGiven) || expect.previewOnly) {
  const p = report.preview?.json;
  check(p?.status === 'confirmation-required' && typeof p?.confirmToken === 'string' && p?.dispatched === false,
    'the first skill_run call asks for confirmation and starts nothing', show(report.preview));
}
if (expect.rejected) {
  const r = report.receipt?.json;
  check(report.receipt?.isError === true && r?.error === expect.rejected,
    `the confirmed call is refused with ${expect.rejected}`, show(report.receipt));
}
if (expect.run) {
  const r = report.receipt?.json;
  check(!report.receipt?.isError && r?.exitCode === 0,
    'the confirmed skill_run ran the script (exit 0)', show(report.receipt));
  let seen;
  try {
    seen = JSON.parse(r?.stdout ?? '');
  } catch {
    seen = undefined;
  }
  check(seen !== undefined, 'the probe printed its status', show(r));
  if (seen) {
    const uid = String(expect.run.uid);
    if (uid.includes('-')) {
      // "LO-HI": a uid of its own from the per-run range, the same in all four places.
      const [lo, hi] = uid.split('-').map(Number);
      const got = Number(seen.Uid?.[0]);
      check(seen.Uid?.every((u) => u === seen.Uid[0]) && got >= lo && got <= hi,
        `the script runs as a uid of its own in ${uid} (real, effective, saved, fs)`, show(seen.Uid));
    } else {
      check(seen.Uid?.every((u) => u === uid), `the script runs as uid ${uid} (real, effective, saved, fs)`, show(seen.Uid));
    }
    if (expect.run.gid !== undefined) {
      check(seen.Gid?.every((g) => g === String(expect.run.gid)), `the script runs as gid ${expect.run.gid}`, show(seen.Gid));
    }
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapAmb']) {
      check(/^0+$/.test(seen[set]?.[0] ?? 'x'), `the script holds no capability (${set})`, show(seen[set]));
    }
    check(seen.NoNewPrivs?.[0] === '1', 'the script runs with no_new_privs', show(seen.NoNewPrivs));
    // The worker empties the bounding set only when it holds CAP_SETPCAP. A broker
    // that is not root (or has left root) has none to pass on, so the set stays as
    // inherited (boundingWithin: what it may be at most): harmless only because the
    // script is not root and no_new_privs stops every exec from gaining a capability.
    const bnd = seen.CapBnd?.[0] ?? 'x';
    if (expect.run.boundingEmpty) {
      // In its own user namespace the worker holds CAP_SETPCAP there: nothing is left.
      check(/^0+$/.test(bnd), 'the script bounding set is empty', show(seen.CapBnd));
    } else if (/^0+$/.test(bnd)) {
      check(true, 'the script bounding set is empty');
    } else if (expect.run.boundingWithin != null &&
               (BigInt(`0x${bnd}`) & ~BigInt(`0x${expect.run.boundingWithin}`)) !== 0n) {
      check(false, `the script bounding set is within ${expect.run.boundingWithin}`, show(seen.CapBnd));
    } else {
      check(seen.NoNewPrivs?.[0] === '1' && seen.Uid?.every((u) => u !== '0'),
        `the script bounding set ${bnd} is left (no CAP_SETPCAP to drop it) but cannot be used: non-root, no_new_privs`,
        show(seen));
    }
    check(seen.Seccomp?.[0] === '2', 'the script runs under a seccomp filter', show(seen.Seccomp));
    for (const n of expect.run.envNames ?? []) {
      check(seen.envNames?.includes(n), `the script receives ${n}`, show(seen.envNames));
    }
  }
}
if (expect.broker) {
  const out = report.inspect?.stdout ?? '';
  const field = (k) => (out.match(new RegExp(`^${k}:\\s*(.*)$`, 'm'))?.[1] ?? '').trim().split(/\s+/);
  check(field('Uid').length === 4 && field('Uid').every((u) => u === String(expect.broker.uid)),
    `the broker runs as uid ${expect.broker.uid}`, out);
  for (const set of ['CapPrm', 'CapEff']) {
    check(field(set)[0] === expect.broker.capEff, `the broker holds exactly the capabilities ${expect.broker.capEff} (${set})`, out);
  }
  const bnd = field('CapBnd')[0];
  check(/^[0-9a-f]+$/.test(bnd ?? '') && (BigInt(`0x${bnd}`) & ~BigInt(`0x${expect.broker.capEff}`)) === 0n,
    'the broker bounding set holds nothing beyond its capabilities', out);
}
console.log(failures === 0 ? 'PASS' : `FAIL: ${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
