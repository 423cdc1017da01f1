// The uid/gid switch (openssh permanently_set_uid style): refuse a privileged target,
// drop groups, gid, uid, then verify that nothing of the old identity is left.
#pragma once

#include <sys/types.h>

#include "worker/step_result.h"

namespace skillmcp::worker {

// kRefuseRootIds: a target uid or gid 0, or one equal to the broker's (the worker's
// current real/effective ids), is refused.
StepResult CheckTargetIds(uid_t uid, gid_t gid);

// kSetGroups, kSetGid, kSetUid, in that order (groups and gid need the privilege the
// uid change gives up).
StepResult SwitchIds(uid_t uid, gid_t gid);

// kVerifyIds: real, effective and saved ids all equal the target, no supplementary
// group is left, and setresuid(0,0,0) / setresgid(0,0,0) now fail. Run after the
// capabilities are cleared (with the securebits locked, the switch itself keeps them).
StepResult VerifyIds(uid_t uid, gid_t gid);

// True when any of the current real, effective or saved uids is 0.
bool AnyRootUid();

}  // namespace skillmcp::worker
