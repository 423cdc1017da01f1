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

#include "shared/borrowed_clone.h"
#include "shared/unique_fd.h"

namespace skillmcp {
namespace {

constexpr int kFree = 0;
constexpr int kTaken = 1;
constexpr int kFailed = 2;

// The probe, in the broker's memory (CloneSharingMemory): system calls on its own stack
// and nothing else; every signal stays blocked (a process of the uid may signal it).
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
  // vfork: the child borrows this memory, the broker's (a fork would copy the broker's
  // page tables and leave its pages copy-on-write), and only exits. errno is shared with
  // the broker, which may write it meanwhile (CloneSharingMemory): an error read wrongly
  // is still "taken" or "failed", never "free", which only the child's exit gives.
  const pid_t child = vfork();
  if (child == 0) _exit(kFree);
  if (child < 0) _exit(errno == EAGAIN ? kTaken : kFailed);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) _exit(kFailed);
  }
  _exit(kFree);
}

int ProbeEntry(void* uid) { RunProbe(*static_cast<const uint32_t*>(uid)); }

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

enum class Wait { kEnded, kRunning, kLost };

// Whether `pid` ends within `wait_ms`, without reaping it: until the caller does, its pid
// and process group stay its own. kRunning when it is still there (running or stopped: a
// stop is no exit, for waitid without WSTOPPED and for a pidfd alike).
Wait EndsWithin(pid_t pid, int wait_ms, siginfo_t* info) {
  const int64_t deadline = NowMs() + wait_ms;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  for (;;) {
    *info = {};
    // No errno read while the probe shares it; WNOHANG never fails with EINTR.
    if (waitid(P_PID, static_cast<id_t>(pid), info, WEXITED | WNOHANG | WNOWAIT) != 0)
      return Wait::kLost;  // not ours any more
    if (info->si_pid == pid) return Wait::kEnded;
    const int64_t left = deadline - NowMs();
    if (left <= 0) return Wait::kRunning;
    if (pidfd) {
      pollfd p{pidfd.get(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(left));  // EINTR or ready: ask waitid again
    } else {
      const timespec ms{0, 1000000};  // no pidfd (kernel before 5.3): look every 1 ms
      nanosleep(&ms, nullptr);
    }
  }
}

}  // namespace

UidProcesses ProbeUidProcesses(uint32_t uid) {
  // Not fork: a copy of the broker for each probe (one per run where each run has a uid
  // of its own) cost its page tables, then a copy-on-write fault on each page the broker
  // wrote next (tests/bench/README.md, "The broker's CPU on that path: a fork per run").
  // The probe shares the broker's memory instead and runs beside it; not CLONE_VFORK:
  // the broker would sleep unkillably in the clone for as long as a process of the uid
  // kept the probe stopped.
  // A process of the uid can still neither trace the probe nor read its memory (its
  // effective and saved uids stay the broker's; ptrace needs all three), and no handler
  // runs in it (every signal blocked but glibc's two internal ones, whose handlers ignore
  // another process's and whose default action kills the probe: "taken").
  ChildStack stack;
  const uint32_t probed = uid;  // read by the probe: lives until it is reaped
  const pid_t pid = CloneSharingMemory(ProbeEntry, const_cast<uint32_t*>(&probed), stack);
  if (pid < 0) return UidProcesses::kUnknown;
  setpgid(pid, pid);  // as the child does: whichever runs first (EACCES after is harmless)
  // why bounded: once switched, any process of the uid may stop the probe or its child
  // (kill(-1, SIGSTOP)); an unbounded wait would freeze the broker's event loop.
  siginfo_t info{};
  const Wait waited = EndsWithin(pid, kProbeWaitMs, &info);
  if (waited == Wait::kLost) {
    // why no kill: reaped by someone else, so the pid may be another process's now; and
    // the stack is kept, in case that was not the end of everything it started.
    stack.Abandon();
    return UidProcesses::kUnknown;
  }
  const bool exited = waited == Wait::kEnded && info.si_code == CLD_EXITED;
  if (!exited) {
    // why: a probe stopped past the wait, or killed by a process of the uid, may leave its
    // vfork child stopped on the probe's stack, in the broker's memory; continued later,
    // it would write there. Its group (the probe's pid, reserved until the reap below) is
    // killed, and the stack, which the killed child may still touch for an instant, is
    // never unmapped (68 KiB, only where a process of the uid interferes).
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    stack.Abandon();
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!exited) return UidProcesses::kUnknown;  // why: fail closed, the uid counts as taken
  switch (info.si_status) {
    case kFree:
      return UidProcesses::kNone;
    case kTaken:
      return UidProcesses::kSome;
    default:
      return UidProcesses::kUnknown;
  }
}

}  // namespace skillmcp
