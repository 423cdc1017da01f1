#include "worker/launch.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "worker/cell.h"
#include "worker/namespaces.h"
#include "worker/report.h"

namespace skillmcp::worker {
namespace {

// The clone's own stack: with CLONE_VM it must not run on the parent's, which the parent
// resumes on. Its frames are a few system-call wrappers deep.
constexpr size_t kChildStackBytes = 64 * 1024;

void Check(const StepResult& result) {
  if (result) FailAndExit(*result);
}

int NodeSide(void* arg) { BecomeNode(*static_cast<const NodeLaunch*>(arg)); }

}  // namespace

void BecomeNode(const NodeLaunch& launch) {
  if (launch.close_first >= 0) close(launch.close_first);
  Check(ResetSignalMask());  // the mirror's, blocked before the fork or clone
  // 11c. Set after the last credential change (a change of credentials clears it).
  Check(DieWithParent(SIGKILL, launch.parent));
  // 12. The skill directory becomes the cwd; its descriptor does not reach the script.
  //     In the run's view, by its bound path: fd 7 belongs to the host's mount
  //     namespace, where ".." would lead back to the hidden skills.
  if (launch.spec.namespaces) {
    Check(EnterBoundSkillDir(launch.spec.skill_dir_path, kWorkerSkillDirFd));
  } else if (fchdir(kWorkerSkillDirFd) != 0) {
    FailAndExit({WorkerStep::kChdir, errno});
  }
  close(kWorkerSkillDirFd);
  // 13. Seccomp last: every earlier step may use what the filter denies. The program
  //     was compiled by the broker at boot and prepared by the parent; the kernel
  //     verifies it.
  if (launch.policy != nullptr) {
    if (int rc = seccomp::LoadPreparedPolicy(*launch.policy); rc < 0)
      FailAndExit({WorkerStep::kSeccomp, -rc});
  }
  // 14. Exec the interpreter by descriptor. Returns only on failure.
  FailAndExit(launch.plan.Exec());
}

pid_t LaunchNode(const NodeLaunch& launch) {
  void* stack = mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) FailAndExit({WorkerStep::kFork, errno});
  // why CLONE_VM | CLONE_VFORK is safe here: the parent sleeps until the exec, the child
  // shares no descriptor table, filesystem context or signal handlers with it (no
  // CLONE_FILES, CLONE_FS, CLONE_SIGHAND), and what it sets (cwd, filter, parent-death
  // signal) is its own; nothing of the script runs before the exec replaces the memory.
  const pid_t child = clone(NodeSide, static_cast<char*>(stack) + kChildStackBytes,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<NodeLaunch*>(&launch));
  const int clone_errno = errno;
  munmap(stack, kChildStackBytes);
  if (child < 0) FailAndExit({WorkerStep::kFork, clone_errno});
  return child;
}

}  // namespace skillmcp::worker
