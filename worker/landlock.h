// The filesystem allowlist (RunSpec::landlock_abi > 0): builds the run's Landlock ruleset
// (worker/landlock_rules.h) and restricts the worker to it; node and everything it starts
// inherit the domain and can never leave it. Call after no_new_privs (the kernel requires
// it of a process without CAP_SYS_ADMIN) and after the run's mounts (a Landlock domain
// refuses mount changes), with fd 7 still open (the skill's rule is made from it).
#pragma once

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// A ruleset made while a worker started ahead waits (CellSpec::landlock_ahead), holding
// the rules no run changes (BuildLandlockAheadPlan); empty otherwise. Its descriptor is
// close-on-exec and above the descriptor layout (a run's 6 and 7 arrive later).
struct LandlockAhead {
  UniqueFd ruleset;
};

// kLandlock on any failure: the ruleset or a required path (node's directory). Called
// where the cell asks for it, after the identity and the view ahead, so that each path
// is opened as the run's user and in the run's view, as ApplyLandlock would.
StepResult PrepareLandlockAhead(const CellSpec& cell, LandlockAhead& ahead);

// kLandlock on any failure: the ruleset, a required path, or restrict_self. With a
// ruleset ahead (CellMatches has checked that the run repeats the cell's values) only
// the run's own rules are added to it; it is closed once the worker is restricted.
StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd, LandlockAhead& ahead);

}  // namespace skillmcp::worker
