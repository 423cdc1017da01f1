// The filesystem allowlist (RunSpec::landlock_abi > 0): builds the run's Landlock ruleset
// (worker/landlock_rules.h) and restricts the worker to it; node and everything it starts
// inherit the domain and can never leave it. Call after no_new_privs (the kernel requires
// it of a process without CAP_SYS_ADMIN) and after the run's mounts (a Landlock domain
// refuses mount changes), with fd 7 still open (the skill's rule is made from it).
#pragma once

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// kLandlock on any failure: the ruleset, a required path, or restrict_self.
StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd);

}  // namespace skillmcp::worker
