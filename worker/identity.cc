#include "worker/identity.h"

#include <grp.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp::worker {

StepResult CheckTargetIds(uid_t uid, gid_t gid) {
  // Root as a target is no drop at all: uid 0 owns most of the system's files even
  // without capabilities, and gid 0 reads what root's group may read.
  if (uid == 0 || gid == 0) return StepFailed(WorkerStep::kRefuseRootIds, EPERM);
  // The run-as identity must differ from the broker's, or a script could signal the
  // broker and read the broker's own files.
  if (uid == getuid() || uid == geteuid() || gid == getgid() || gid == getegid())
    return StepFailed(WorkerStep::kRefuseRootIds, EINVAL);
  return StepOk();
}

StepResult SwitchIds(uid_t uid, gid_t gid) {
  // Supplementary groups first: left in place, they would keep the broker's group access.
  if (setgroups(0, nullptr) != 0) return StepFailed(WorkerStep::kSetGroups, errno);
  if (setresgid(gid, gid, gid) != 0) return StepFailed(WorkerStep::kSetGid, errno);
  // All three uids: a saved uid of 0 would let the script switch back.
  if (setresuid(uid, uid, uid) != 0) return StepFailed(WorkerStep::kSetUid, errno);
  return StepOk();
}

StepResult VerifyIds(uid_t uid, gid_t gid) {
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || getresgid(&rg, &eg, &sg) != 0)
    return StepFailed(WorkerStep::kVerifyIds, errno);
  if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
    return StepFailed(WorkerStep::kVerifyIds, EPERM);
  if (getgroups(0, nullptr) != 0) return StepFailed(WorkerStep::kVerifyIds, EPERM);
  // The drop must be one-way: if root can be regained, a capability survived somewhere.
  if (setresuid(0, 0, 0) == 0) return StepFailed(WorkerStep::kVerifyIds, EPERM);
  if (setresgid(0, 0, 0) == 0) return StepFailed(WorkerStep::kVerifyIds, EPERM);
  return StepOk();
}

bool AnyRootUid() {
  uid_t ru, eu, su;
  if (getresuid(&ru, &eu, &su) != 0) return true;  // unknown: assume the worst
  return ru == 0 || eu == 0 || su == 0;
}

}  // namespace skillmcp::worker
