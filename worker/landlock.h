// The filesystem allowlist (RunSpec::landlock_abi > 0): builds the run's Landlock ruleset
// (worker/landlock_rules.h) and restricts the worker to it; node and everything it starts
// inherit the domain and can never leave it. Call after no_new_privs (the kernel requires
// it of a process without CAP_SYS_ADMIN) and after the run's mounts (a Landlock domain
// refuses mount changes), with fd 7 still open (the skill's rule is made from it).
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/operator_ids.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// A directory a rule made ahead was granted around, entry by entry (it lies above an
// operator's directory), as it was then. A change since (an entry made, renamed or
// removed changes its times; a directory put in its place, its inode) leaves those
// rules stale.
struct WalkedDir {
  std::string path;
  struct stat seen {};
};

// A ruleset made while a worker started ahead waits (CellSpec::landlock_ahead), holding
// the rules no run changes (BuildLandlockAheadPlan), with what they were decided by: the
// operator's directories then and the directories granted around them. Empty otherwise.
// Its descriptor is close-on-exec and above the descriptor layout (a run's 6 and 7
// arrive later).
struct LandlockAhead {
  UniqueFd ruleset;
  OperatorIds ops;
  std::vector<WalkedDir> walked;
};

// kLandlock on any failure: the ruleset or a required path (node's directory). Called
// where the cell asks for it, after the identity and the view ahead, with the effective
// capabilities off meanwhile, so that each path is opened as the run's user alone and in
// the run's view, as ApplyLandlock opens it.
StepResult PrepareLandlockAhead(const CellSpec& cell, LandlockAhead& ahead);

// kLandlock on any failure: the ruleset, a required path, or restrict_self. With a
// ruleset ahead (CellMatches has checked that the run repeats the cell's values) that
// still holds (the same operator's directories now, every directory walked unchanged)
// only the run's own rules are added to it; a stale one is dropped and the whole ruleset
// made now. Either is closed once the worker is restricted.
StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd, LandlockAhead& ahead);

}  // namespace skillmcp::worker
