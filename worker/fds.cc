#include "worker/fds.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "shared/worker_protocol.h"

namespace skillmcp::worker {
namespace {

constexpr int kFirstUnused = kWorkerSkillDirFd + 1;

StepResult Fail(int err) { return StepFailed(WorkerStep::kCheckFds, err); }

StepResult ExpectKind(int fd, mode_t kind) {
  struct stat st;
  if (fstat(fd, &st) != 0) return Fail(errno);
  // Only the kind the layout names: a FIFO or device on the script fd could block node,
  // and a non-directory on fd 7 would make the cwd something else.
  if ((st.st_mode & S_IFMT) != kind) return Fail(kind == S_IFDIR ? ENOTDIR : EINVAL);
  return StepOk();
}

StepResult SetCloexec(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags < 0) return StepFailed(WorkerStep::kCloseFds, errno);
  const int wanted = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
  if (wanted != flags && fcntl(fd, F_SETFD, wanted) != 0)
    return StepFailed(WorkerStep::kCloseFds, errno);
  return StepOk();
}

// Without close_range (kernels before 5.9): every number up to the descriptor limit.
// No /proc walk: /proc may be absent or hidden in a hardened deployment.
StepResult CloseFromLoop(int first) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return StepFailed(WorkerStep::kCloseFds, errno);
  const rlim_t top =
      rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < top; ++fd) close(static_cast<int>(fd));
  return StepOk();
}

}  // namespace

StepResult CheckStartFds(bool probe) {
  for (int fd : {0, 1, 2, kWorkerReportFd}) {
    // Missing stdio would let the next open() land on 0..2 and node write output into
    // it; a missing report fd leaves the broker blind. Both refuse the run.
    if (fcntl(fd, F_GETFD) < 0) return Fail(EBADF);
  }
  if (probe) return StepOk();  // a probe execs nothing: no interpreter, script or dir
  return ExpectKind(kWorkerNodeFd, S_IFREG);
}

StepResult CheckRunFds() {
  if (auto e = ExpectKind(kWorkerScriptFd, S_IFREG)) return e;
  return ExpectKind(kWorkerSkillDirFd, S_IFDIR);
}

StepResult CloseInheritedFds() {
  // Everything the broker leaked above 7 goes, so the script cannot reach a broker
  // descriptor it was never meant to have; 3 is still to be read.
  if (syscall(SYS_close_range, kFirstUnused, ~0U, 0) != 0) {
    if (errno != ENOSYS && errno != EINVAL) return StepFailed(WorkerStep::kCloseFds, errno);
    if (auto e = CloseFromLoop(kFirstUnused)) return e;
  }
  // Report and interpreter fds close at exec: node and the script never hold the report
  // pipe (only the worker's own processes write there), and node has no use for its own
  // binary.
  for (int fd : {kWorkerReportFd, kWorkerNodeFd})
    if (auto e = SetCloexec(fd, true)) return e;
  // stdio and the open script (CloseSpecFd) are what node inherits (the bootstrap reads fd 6).
  for (int fd : {0, 1, 2})
    if (auto e = SetCloexec(fd, false)) return e;
  return StepOk();
}

StepResult CloseSpecFd() {
  close(kWorkerSpecFd);  // the description is read: the broker has nothing more to say
  if (auto e = SetCloexec(kWorkerScriptFd, false)) return e;
  // fd 7 must not leak into node either: it is closed after fchdir (step kChdir), and
  // close-on-exec until then in case a later step's failure path is ever changed.
  return SetCloexec(kWorkerSkillDirFd, true);
}

}  // namespace skillmcp::worker
