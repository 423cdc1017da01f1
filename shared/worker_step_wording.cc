// The broker's wording for the worker's steps (shared/worker_protocol.h, WorkerStep):
// the phrase each step code stands for in what a client or an operator reads.
#include "shared/worker_protocol.h"

namespace skillmcp {

const char* DescribeWorkerStep(WorkerStep step) {
  switch (step) {
    case WorkerStep::kSpawn:
      return "be started by the broker (placing its descriptors, exec of the worker binary)";
    case WorkerStep::kReadSpec:
      return "read a valid run description from the broker";
    case WorkerStep::kCheckFds:
      return "find the expected descriptors (report, node, script, skill dir)";
    case WorkerStep::kSetsid:
      return "start its own session and process group with default signal handling";
    case WorkerStep::kCloseFds:
      return "close the inherited descriptors";
    case WorkerStep::kSetLimits:
      return "apply the resource limits";
    case WorkerStep::kSecurebits:
      return "lock the securebits";
    case WorkerStep::kDropBounding:
      return "drop the capability bounding set";
    case WorkerStep::kRefuseRootIds:
      return "accept the run-as identity (root, or the broker's own uid or gid, is refused)";
    case WorkerStep::kSetGroups:
      return "drop the supplementary groups";
    case WorkerStep::kSetGid:
      return "switch to the run-as gid";
    case WorkerStep::kSetUid:
      return "switch to the run-as uid";
    case WorkerStep::kUserNamespace:
      return "create the run's user and mount namespace";
    case WorkerStep::kMountView:
      return "build the run's filesystem view (private /tmp, other skills and users' places "
             "hidden)";
    case WorkerStep::kReadOnlyView:
      return "make the run's view read-only (but its /tmp, /dev/shm, scratch directory and "
             "MCP_DATA_DIR)";
    case WorkerStep::kOwnNetwork:
      return "give the run its own network (namespace, resolver and the declared hosts' "
             "listeners)";
    case WorkerStep::kDropAmbient:
      return "clear the ambient capabilities";
    case WorkerStep::kDropCaps:
      return "clear the effective, permitted and inheritable capabilities";
    case WorkerStep::kVerifyIds:
      return "verify that the uid/gid switch cannot be undone";
    case WorkerStep::kVerifyCaps:
      return "verify that no capability is left";
    case WorkerStep::kNoNewPrivs:
      return "set no_new_privs";
    case WorkerStep::kLandlock:
      return "restrict itself to the run's filesystem allowlist (Landlock)";
    case WorkerStep::kChdir:
      return "enter the skill directory";
    case WorkerStep::kSeccomp:
      return "install the seccomp filter";
    case WorkerStep::kExec:
      return "execute the interpreter";
    case WorkerStep::kPidNamespace:
      return "create the run's pid and IPC namespace";
    case WorkerStep::kFork:
      return "start the run's first process";
    case WorkerStep::kMountProc:
      return "mount the run's own /proc";
    case WorkerStep::kParentDeath:
      return "tie the run's life to its parent (parent-death signal)";
    case WorkerStep::kMirrorSeccomp:
      return "install the seccomp filter of the run's mirror (the relay of its declared hosts)";
  }
  return "complete an unknown setup step";
}

}  // namespace skillmcp
