// The process probe (broker/run/uid_probe.h) against a hostile uid and at its blind spot:
// a process of the uid that stops every process of its uid (kill(-1, SIGSTOP) in a loop)
// must not freeze the caller, and the pool then skips that uid; a process of the uid in a
// user namespace that root created is not seen (docs/isolation.md, "Own identity per run",
// which is why the range is checked against the host's id files at boot).
#include "broker/run/uid_probe.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "broker/run/run_uids.h"

namespace skillmcp {
namespace {

// A process of `uid` that stops every other process of its uid, forever; returned once
// it runs as the uid (-1 when it could not switch).
pid_t StartStopper(uint32_t uid) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) _exit(1);
    (void)!write(ready[1], "y", 1);
    close(ready[1]);
    for (;;) kill(-1, SIGSTOP);  // kill(-1) spares the caller itself
  }
  close(ready[1]);
  char c = 0;
  const bool switched = pid > 0 && read(ready[0], &c, 1) == 1;
  close(ready[0]);
  if (pid > 0 && !switched) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return switched ? pid : -1;
}

void Stop(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Runs `body` in a child and returns its exit code; 124 when it has not ended after
// `watchdog_s` (a hang, not a slow machine: the bound is hundreds of times the work).
int InChildWithWatchdog(const std::function<int()>& body, int watchdog_s) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(body());
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  pollfd p{pidfd, POLLIN, 0};
  const bool ended = pidfd >= 0 && poll(&p, 1, watchdog_s * 1000) == 1;
  if (pidfd >= 0) close(pidfd);
  if (!ended) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ended) return 124;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Finding A: before the bounded wait, a stopped probe (or probe child) kept waitpid()
// from ever returning, and the broker's event loop with it.
TEST(ProbeUidProcesses, AStoppingProcessOfTheUidCannotFreezeTheProbe) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113030;
  const pid_t stopper = StartStopper(kUid);
  ASSERT_GT(stopper, 0);
  // 50 probes: most are caught by the stopper; each must end, and none may say "free".
  const int verdict = InChildWithWatchdog(
      [] {
        for (int i = 0; i < 50; ++i) {
          if (ProbeUidProcesses(kUid) == UidProcesses::kNone) return 1;
        }
        return 0;
      },
      60);
  Stop(stopper);
  ASSERT_NE(verdict, 124) << "a probe never returned: the broker would be frozen";
  EXPECT_EQ(verdict, 0) << "a probe said the uid is free while a process of it runs";
}

// The probe takes the uid as its real uid only: the kernel counts processes per real uid,
// and with its effective and saved uids still the caller's, a process of the uid can stop
// the probe but never trace it or open its memory (a copy of the broker's). Each probe the
// stopper catches is looked at while it is stopped.
TEST(ProbeUidProcesses, AProbeCaughtByTheUidKeepsTheCallersEffectiveAndSavedUids) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113031;
  const pid_t stopper = StartStopper(kUid);
  ASSERT_GT(stopper, 0);
  const pid_t prober = fork();
  ASSERT_GE(prober, 0);
  if (prober == 0) {
    for (int i = 0; i < 20; ++i) ProbeUidProcesses(kUid);
    _exit(0);
  }
  int seen = 0;
  std::string wrong;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(prober, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      if (std::stoi(name) == stopper) continue;
      std::ifstream status(entry.path() / "status");
      std::string line;
      while (std::getline(status, line)) {
        if (line.rfind("Uid:", 0) != 0) continue;
        std::istringstream ids(line.substr(4));
        uint64_t real = 0, effective = 0, saved = 0;
        ids >> real >> effective >> saved;
        if (real == kUid) {
          ++seen;
          if (effective == kUid || saved == kUid) wrong = name + " " + line;
        }
        break;
      }
    }
    usleep(2000);
  }
  kill(prober, SIGKILL);
  waitpid(prober, nullptr, 0);
  Stop(stopper);
  EXPECT_GT(seen, 0) << "no probe was seen under the uid";
  EXPECT_EQ(wrong, "") << "a probe ran with the uid as its effective or saved uid";
}

// The pool over the real probe: the stopper's uid is skipped, its neighbour handed out.
TEST(ProbeUidProcesses, ThePoolSkipsTheUidOfAStoppingProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113040;
  char tmpl[] = "/tmp/skillmcp-probe-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const pid_t stopper = StartStopper(kUid);
  ASSERT_GT(stopper, 0);
  const int verdict = InChildWithWatchdog(
      [&dir] {
        RunUidPool pool(UniqueFd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), dir,
                        RunUidRange{kUid, kUid + 1},
                        [](uint32_t uid) { return ProbeUidProcesses(uid) != UidProcesses::kNone; });
        for (int i = 0; i < 50; ++i) {  // about half start at the stopper's uid
          RunUidPool::Acquired a = pool.Acquire();
          if (!a.lease) return 1;
          if (a.lease->uid() != kUid + 1) return 2;
        }
        return 0;
      },
      60);
  Stop(stopper);
  std::filesystem::remove_all(dir);
  ASSERT_NE(verdict, 124) << "Acquire never returned: the broker would be frozen";
  EXPECT_EQ(verdict, 0) << "1: no uid handed out; 2: the stopper's uid handed out";
}

// The blind spot the docs state: root creates a user namespace mapping 0 to the uid and
// a process becomes 0 in it, so it runs as the uid on the host, yet its count goes to the
// namespace's creator (root), not to the uid. The probe says "none".
TEST(ProbeUidProcesses, DoesNotSeeTheUidInAUserNamespaceRootCreated) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create and map a user namespace";
  constexpr uint32_t kUid = 1879113050;
  int go[2], ready[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    if (c != 'y' || read(go[0], &c, 1) != 1) _exit(1);
    // Mapped now: become 0 inside, which is kUid outside.
    c = syscall(SYS_setresuid, 0, 0, 0) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    for (;;) pause();
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  if (c != 'y') {
    Stop(child);
    GTEST_SKIP() << "user namespaces are refused here";
  }
  const std::string proc = "/proc/" + std::to_string(child);
  std::ofstream(proc + "/setgroups") << "deny";
  std::ofstream(proc + "/uid_map") << "0 " << kUid << " 1\n";
  ASSERT_EQ(write(go[1], "g", 1), 1);
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::string status;
  std::getline(std::ifstream(proc + "/status"), status, '\0');
  const UidProcesses seen = ProbeUidProcesses(kUid);
  Stop(child);
  ASSERT_EQ(c, 'y') << "the child could not become 0 in its namespace";
  const std::string uid = std::to_string(kUid);
  ASSERT_NE(status.find("Uid:\t" + uid + "\t" + uid + "\t" + uid), std::string::npos) << status;
  EXPECT_EQ(seen, UidProcesses::kNone) << "the kernel now counts it: update docs/isolation.md";
}

}  // namespace
}  // namespace skillmcp
