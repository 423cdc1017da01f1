// The host-wide state directory a benchmark's broker is given, so that its runs take the
// path an installed broker takes (tests/bench/README.md, "The benchmark's brokers on the
// installed path"): a broker started from the build tree uses no host-wide state
// directory unless told (broker/harden/state_dir.h), and without one every run shares the
// run-as uid, so nothing of the run's cell is made ahead (doctor: `run-identity: off`). As
// root, a fresh 0700 directory under `parent`, owned by the service uid the broker drops
// to (SKILL_MCP_USER, numeric; 64001, the broker's own fallback, unless given), turns the
// per-run uids on (SKILL_MCP_RUN_UIDS' default range), and with them the worker's uid,
// view, scratch directory and Landlock rules made ahead. Another uid cannot switch uids,
// so it gets none. An explicit SKILL_MCP_STATE_DIR in `given` is left as it is, and
// SKILL_MCP_RUN_UIDS=off there turns the per-run uids off again.
import fs from 'node:fs';
import path from 'node:path';

export function benchStateDir(parent, given = {}) {
  if ('SKILL_MCP_STATE_DIR' in given) {
    return { env: {}, note: `the state directory given: ${given.SKILL_MCP_STATE_DIR}` };
  }
  if (process.geteuid() !== 0) {
    return { env: {}, note: 'not root: every run shares the broker\'s uid, as a user\'s own broker does' };
  }
  const service = Number(given.SKILL_MCP_USER ?? 64001);
  if (!Number.isInteger(service)) {
    return { env: {}, note: 'SKILL_MCP_USER is not numeric: no state directory made, every run shares one uid' };
  }
  const dir = path.join(parent, 'state');
  // The broker, as the service uid, must reach the directory: a mkdtemp parent is 0700,
  // and behind it the broker ran every run under the shared uid (doctor: "cannot resolve
  // the state directory ...: Permission denied") while this said otherwise.
  fs.chmodSync(parent, 0o755);
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.chownSync(dir, service, service);
  const off = given.SKILL_MCP_RUN_UIDS === 'off';
  return {
    env: { SKILL_MCP_STATE_DIR: dir, SKILL_MCP_USER: String(service) },
    note: off ? `state directory ${dir}, per-run uids off (SKILL_MCP_RUN_UIDS=off)`
      : `state directory ${dir}: a uid of its own per run, the cell made ahead (as installed)`,
  };
}
