#include "broker/run/uid_probe.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp {
namespace {

constexpr int kFree = 0;
constexpr int kTaken = 1;
constexpr int kFailed = 2;

// The forked probe: async-signal-safe calls only (the broker may have threads).
[[noreturn]] void RunProbe(uint32_t uid) {
  // why 2: the probe itself and its one child; a third process of the uid fails the fork.
  const struct rlimit two = {2, 2};
  if (setrlimit(RLIMIT_NPROC, &two) != 0) _exit(kFailed);
  // Raw system calls: only this thread changes (glibc's wrappers would signal the
  // broker's other threads, which do not exist in this child).
  if (syscall(SYS_setresuid, uid, uid, uid) != 0) _exit(kFailed);
  // why: CAP_SYS_RESOURCE or CAP_SYS_ADMIN would lift the limit; none may be left (a
  // switch between two non-root uids keeps the capabilities).
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  if (syscall(SYS_capset, &header, none) != 0) _exit(kFailed);
  // A bare clone, like fork without glibc's handlers; the child only exits.
  const pid_t child =
      static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (child == 0) _exit(kFree);
  if (child < 0) _exit(errno == EAGAIN ? kTaken : kFailed);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) _exit(kFailed);
  }
  _exit(kFree);
}

}  // namespace

UidProcesses ProbeUidProcesses(uint32_t uid) {
  const pid_t pid = fork();
  if (pid < 0) return UidProcesses::kUnknown;
  if (pid == 0) RunProbe(uid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return UidProcesses::kUnknown;
  }
  if (!WIFEXITED(status)) return UidProcesses::kUnknown;
  switch (WEXITSTATUS(status)) {
    case kFree:
      return UidProcesses::kNone;
    case kTaken:
      return UidProcesses::kSome;
    default:
      return UidProcesses::kUnknown;
  }
}

}  // namespace skillmcp
