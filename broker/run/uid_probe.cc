#include "broker/run/uid_probe.h"

#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "shared/unique_fd.h"

namespace skillmcp {
namespace {

constexpr int kFree = 0;
constexpr int kTaken = 1;
constexpr int kFailed = 2;

// The forked probe: async-signal-safe calls only (the broker may have threads).
[[noreturn]] void RunProbe(uint32_t uid) {
  // why: a group of its own, so the broker can kill the probe's child with it on timeout.
  if (setpgid(0, 0) != 0) _exit(kFailed);
  // why 2: the probe itself and its one child; a third process of the uid fails the fork.
  const struct rlimit two = {2, 2};
  if (setrlimit(RLIMIT_NPROC, &two) != 0) _exit(kFailed);
  // Raw system calls: only this thread changes (glibc's wrappers would signal the
  // broker's other threads, which do not exist in this child).
  // why only the real uid: the kernel counts RLIMIT_NPROC per real uid, and with its
  // effective and saved uids still the broker's a process of `uid` can stop the probe but
  // never trace it or open its memory, a copy of the broker's (ptrace needs all three to
  // match), whatever fs.suid_dumpable says (the flag is not reset: no effective id changes).
  if (syscall(SYS_setresuid, uid, -1, -1) != 0) _exit(kFailed);
  // why: CAP_SYS_RESOURCE or CAP_SYS_ADMIN would lift the limit; none may be left (a
  // switch of the real uid alone keeps every capability, a root broker's included).
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

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

enum class Wait { kReaped, kRunning, kLost };

// Reaps `pid` if it ends within `wait_ms`; kRunning when it is still there (running or
// stopped: a stop is no exit, for waitpid without WUNTRACED and for a pidfd alike).
Wait ReapWithin(pid_t pid, int wait_ms, int* status) {
  const int64_t deadline = NowMs() + wait_ms;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  for (;;) {
    const pid_t got = waitpid(pid, status, WNOHANG);
    if (got == pid) return Wait::kReaped;
    if (got < 0 && errno != EINTR) return Wait::kLost;  // not ours to kill any more
    const int64_t left = deadline - NowMs();
    if (left <= 0) return Wait::kRunning;
    if (pidfd) {
      pollfd p{pidfd.get(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(left));  // EINTR or ready: ask waitpid again
    } else {
      const timespec ms{0, 1000000};  // no pidfd (kernel before 5.3): look every 1 ms
      nanosleep(&ms, nullptr);
    }
  }
}

}  // namespace

UidProcesses ProbeUidProcesses(uint32_t uid) {
  const pid_t pid = fork();
  if (pid < 0) return UidProcesses::kUnknown;
  if (pid == 0) RunProbe(uid);
  setpgid(pid, pid);  // as the child does: whichever runs first (EACCES after is harmless)
  int status = 0;
  // why bounded: once switched, any process of the uid may stop the probe or its child
  // (kill(-1, SIGSTOP)); an unbounded wait would freeze the broker's event loop.
  const Wait waited = ReapWithin(pid, kProbeWaitMs, &status);
  if (waited == Wait::kLost) return UidProcesses::kUnknown;
  if (waited == Wait::kRunning) {
    kill(-pid, SIGKILL);  // the probe's group: the probe and its child, stopped or not
    kill(pid, SIGKILL);   // in case the group was never made
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return UidProcesses::kUnknown;  // why: fail closed, the uid counts as taken
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
