#include "worker/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "shared/borrowed_clone.h"
#include "worker/cell.h"
#include "worker/namespaces.h"
#include "worker/report.h"

namespace skillmcp::worker {
namespace {

void Check(const StepResult& result) {
  if (result) FailAndExit(*result);
}

int NodeSide(void* arg) { BecomeNode(*static_cast<const NodeLaunch*>(arg)); }

}  // namespace

void BecomeNode(const NodeLaunch& launch) {
  if (launch.close_first >= 0) close(launch.close_first);
  Check(ResetSignalMask());  // the mirror's, blocked before the fork or clone
  // kParentDeath. Set after the last credential change (a change of credentials clears it).
  Check(DieWithParent(SIGKILL, launch.parent));
  // kChdir. The skill directory becomes the cwd; its descriptor does not reach the
  // script. In the run's view, by its bound path: fd 7 belongs to the host's mount
  // namespace, where ".." would lead back to the hidden skills.
  if (launch.spec.namespaces) {
    Check(EnterBoundSkillDir(launch.spec.skill_dir_path, kWorkerSkillDirFd));
  } else if (fchdir(kWorkerSkillDirFd) != 0) {
    FailAndExit({WorkerStep::kChdir, errno});
  }
  close(kWorkerSkillDirFd);
  // kSeccomp last: every earlier step may use what the filter denies. The program was
  // compiled by the broker at boot and prepared by the parent; the kernel verifies it.
  if (launch.policy != nullptr) {
    if (int rc = seccomp::LoadPreparedPolicy(*launch.policy); rc < 0)
      FailAndExit({WorkerStep::kSeccomp, -rc});
  }
  // kExec. Exec the interpreter by descriptor. Returns only on failure.
  FailAndExit(launch.plan.Exec());
}

pid_t LaunchNode(const NodeLaunch& launch) {
  // why CLONE_VM | CLONE_VFORK is safe here: the parent sleeps until the exec, the child
  // shares no descriptor table, filesystem context or signal handlers with it, and what
  // it sets (cwd, filter, parent-death signal) is its own; nothing of the script runs
  // before the exec replaces the memory. No signal to block around it: the worker installs
  // no handler (kSetsid's step set every disposition to default).
  const pid_t child = CloneBorrowingMemory(NodeSide, const_cast<NodeLaunch*>(&launch));
  const int clone_errno = errno;
  if (child < 0) FailAndExit({WorkerStep::kFork, clone_errno});
  return child;
}

}  // namespace skillmcp::worker
