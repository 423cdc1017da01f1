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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "broker/run/run_uids.h"

namespace skillmcp {
namespace {

// A process of `uid` that sends each of `sigs` in turn (SIGSTOP: stops) to every other
// process of its uid, forever, ignoring them itself; returned once it runs as the uid (-1
// when it could not switch).
pid_t StartSignaller(uint32_t uid, std::initializer_list<int> sigs) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    for (int sig : sigs)
      if (sig != SIGSTOP) signal(sig, SIG_IGN);
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) _exit(1);
    (void)!write(ready[1], "y", 1);
    close(ready[1]);
    for (;;)
      for (int sig : sigs) kill(-1, sig);  // kill(-1) spares the caller itself
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

pid_t StartStopper(uint32_t uid) { return StartSignaller(uid, {SIGSTOP}); }

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
  // Probes until told to stop (never killed in a probe, which would leave that probe
  // stopped for good): a probe lives some microseconds unless the stopper catches it (then
  // 100 ms), and on a loaded machine the stopper may miss many in a row.
  int enough[2];
  ASSERT_EQ(pipe2(enough, O_NONBLOCK), 0);
  const pid_t prober = fork();
  ASSERT_GE(prober, 0);
  if (prober == 0) {
    char c;
    while (read(enough[0], &c, 1) != 1) ProbeUidProcesses(kUid);
    _exit(0);
  }
  int seen = 0;
  std::string wrong;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen < 5 && waitpid(prober, nullptr, WNOHANG) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
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
  (void)!write(enough[1], "s", 1);
  waitpid(prober, nullptr, 0);
  close(enough[0]);
  close(enough[1]);
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

// The probe runs in the caller's memory (shared/borrowed_clone.h): a process of the uid
// that signals it must never run a handler of the caller's there. Each SIGUSR1, SIGHUP or
// SIGTERM delivered to a probe would count in the caller's memory here.
std::atomic<int> handled{0};
void CountSignal(int) { handled.fetch_add(1); }

TEST(ProbeUidProcesses, AProcessOfTheUidSignallingTheProbeRunsNoHandlerOfTheCallers) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113032;
  const int verdict = InChildWithWatchdog(
      [] {
        struct sigaction count {};
        count.sa_handler = CountSignal;
        for (int sig : {SIGUSR1, SIGHUP, SIGTERM})
          if (sigaction(sig, &count, nullptr) != 0) return 3;
        const pid_t signaller = StartSignaller(kUid, {SIGUSR1, SIGHUP, SIGTERM});
        if (signaller <= 0) return 4;
        int seen = 0;  // probes that met a process of the uid, as they must
        for (int n = 0; n < 100; ++n) seen += ProbeUidProcesses(kUid) != UidProcesses::kNone;
        Stop(signaller);
        if (handled.load() != 0) return 1;
        return seen == 100 ? 0 : 2;
      },
      60);
  ASSERT_NE(verdict, 124) << "a probe never returned";
  EXPECT_EQ(verdict, 0) << "1: a handler of the caller's ran (in a probe); 2: a probe said "
                           "\"free\" beside the signallers; 3, 4: the setup failed";
}

// The probe copies none of the caller's memory: after it, the caller writes its pages
// without a fault each (a fork leaves every page copy-on-write, and the next write to each
// faults: tests/bench/README.md, "The broker's CPU on that path: a fork per run").
// Counted by the kernel, not timed.
TEST(ProbeUidProcesses, LeavesTheCallersPagesWritableWithoutAFault) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113033;
  constexpr size_t kPages = 512;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<char> memory(kPages * page, 1);  // every page touched: resident and writable
  const auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  const auto write_all = [&](char v) {
    for (size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(memory.data())[i * page] = v;
  };
  write_all(2);
  ASSERT_EQ(ProbeUidProcesses(kUid), UidProcesses::kNone);
  const long before = faults();
  write_all(3);
  const long after_probe = faults() - before;
  // Control: the same writes after a fork do fault, once a page.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const long before_control = faults();
  write_all(4);
  const long after_fork = faults() - before_control;
  EXPECT_GE(after_fork, static_cast<long>(kPages))
      << "control: a fork leaves the pages copy-on-write";
  EXPECT_LT(after_probe, static_cast<long>(kPages / 8)) << "the probe left the caller's pages "
                                                           "to fault on their next write";
}

// The blind spot the docs state: root creates a user namespace mapping 0 to the uid and
// a process becomes 0 in it, so it runs as the uid on the host, yet its count goes to the
// namespace's creator (root), not to the uid. The probe says "none".
// A process running as `uid` on the host that the kernel counts for root, not for the
// uid: root makes a user namespace mapping 0 to the uid and the process becomes 0 in it
// (the blind spot of docs/isolation.md). It runs `body` once it is `uid`; `status` gets
// its /proc status then. -1 with `skip` set where user namespaces are refused.
pid_t StartUncounted(uint32_t uid, const std::function<void()>& body, std::string* status,
                     std::string* skip) {
  int go[2], ready[2];
  if (pipe(go) != 0 || pipe(ready) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    if (c != 'y' || read(go[0], &c, 1) != 1) _exit(1);
    // Mapped now: become 0 inside, which is `uid` outside.
    c = syscall(SYS_setresuid, 0, 0, 0) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    if (c == 'y') body();
    _exit(0);
  }
  char c = 0;
  if (read(ready[0], &c, 1) != 1 || c != 'y') {
    Stop(child);
    *skip = "user namespaces are refused here";
    return -1;
  }
  const std::string proc = "/proc/" + std::to_string(child);
  std::ofstream(proc + "/setgroups") << "deny";
  std::ofstream(proc + "/uid_map") << "0 " << uid << " 1\n";
  if (write(go[1], "g", 1) != 1 || read(ready[0], &c, 1) != 1 || c != 'y') {
    Stop(child);
    *skip = "the child could not become 0 in its namespace";
    return -1;
  }
  std::getline(std::ifstream(proc + "/status"), *status, '\0');
  for (int fd : {go[0], go[1], ready[0], ready[1]}) close(fd);
  return child;
}

// The real uid, process group and state of `pid`, from /proc; false when it is gone.
bool RealUidAndGroup(pid_t pid, uint32_t* uid, pid_t* group, char* state) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string status, stat;
  std::getline(std::ifstream(proc + "/status"), status, '\0');
  std::getline(std::ifstream(proc + "/stat"), stat);
  const size_t u = status.find("\nUid:\t"), close_paren = stat.rfind(')');
  if (u == std::string::npos || close_paren == std::string::npos) return false;
  *uid = static_cast<uint32_t>(std::stoul(status.substr(u + 6)));
  std::istringstream rest(stat.substr(close_paren + 2));  // state ppid pgrp ...
  pid_t ppid = 0;
  rest >> *state >> ppid >> *group;
  return static_cast<bool>(rest);
}

// Every pid in /proc.
std::vector<pid_t> Pids() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") == std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

TEST(ProbeUidProcesses, DoesNotSeeTheUidInAUserNamespaceRootCreated) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create and map a user namespace";
  constexpr uint32_t kUid = 1879113050;
  std::string status, skip;
  const pid_t child = StartUncounted(
      kUid,
      [] {
        for (;;) pause();
      },
      &status, &skip);
  if (child < 0) GTEST_SKIP() << skip;
  const UidProcesses seen = ProbeUidProcesses(kUid);
  Stop(child);
  const std::string uid = std::to_string(kUid);
  ASSERT_NE(status.find("Uid:\t" + uid + "\t" + uid + "\t" + uid), std::string::npos) << status;
  EXPECT_EQ(seen, UidProcesses::kNone) << "the kernel now counts it: update docs/isolation.md";
}

// From that blind spot (the one place where a process of the uid lets the probe fork its
// child) a process of the uid stops every other process of the uid, and the probe, the
// leader of its group, is killed while its vfork child is stopped on the probe's stack, in
// the caller's memory. (The killing is done by a root process here, for speed; a process
// of the uid may do the same.) After each probe, no process may still share the caller's
// memory: the probe's group is killed, so the child cannot be continued to write there.
TEST(ProbeUidProcesses, AProbeKilledByTheUidLeavesNothingInTheCallersMemory) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create and map a user namespace";
  if (syscall(SYS_kcmp, getpid(), getpid(), 1 /* KCMP_VM */, 0, 0) != 0)
    GTEST_SKIP() << "no kcmp() here to compare memories: " << strerror(errno);
  constexpr uint32_t kUid = 1879113051;
  std::string status, skip;
  const pid_t stopper = StartUncounted(
      kUid,
      [] {
        for (;;) kill(-1, SIGSTOP);
      },
      &status, &skip);
  if (stopper < 0) GTEST_SKIP() << skip;
  // A process of the uid leading its own group (a probe) with another process of its
  // group beside it (its vfork child, which the stopper has stopped: the probe waits for
  // it in the kernel meanwhile).
  const auto probe_with_child = [&](pid_t pid) {
    uint32_t uid = 0;
    pid_t group = 0;
    char state = 0;
    if (pid == stopper || !RealUidAndGroup(pid, &uid, &group, &state)) return false;
    if (uid != kUid || group != pid) return false;
    for (pid_t other : Pids()) {
      if (other != pid && RealUidAndGroup(other, &uid, &group, &state) && group == pid) return true;
    }
    return false;
  };
  int caught[2];
  ASSERT_EQ(pipe2(caught, O_NONBLOCK), 0);
  const pid_t killer = fork();
  ASSERT_GE(killer, 0);
  if (killer == 0) {
    for (;;) {
      for (pid_t pid : Pids()) {
        if (!probe_with_child(pid)) continue;
        kill(pid, SIGKILL);  // the probe alone: its child stays stopped
        (void)!write(caught[1], "c", 1);
      }
    }
  }
  // A process of the uid still sharing this memory.
  const auto sharer = [&]() -> pid_t {
    for (pid_t pid : Pids()) {
      uint32_t uid = 0;
      pid_t group = 0;
      char state = 0;
      if (pid == stopper || !RealUidAndGroup(pid, &uid, &group, &state) || uid != kUid) continue;
      if (syscall(SYS_kcmp, getpid(), pid, 1 /* KCMP_VM */, 0, 0) == 0) return pid;
    }
    return 0;
  };
  int children_caught = 0;
  pid_t left = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (left == 0 && children_caught < 5 && std::chrono::steady_clock::now() < deadline) {
    ProbeUidProcesses(kUid);
    char c;
    while (read(caught[0], &c, 1) == 1) ++children_caught;
    // A killed child may take a moment to go; one stopped for good does not.
    for (int wait = 0; wait < 100 && (left = sharer()) != 0; ++wait) usleep(2000);
  }
  Stop(killer);
  Stop(stopper);
  if (left != 0) kill(left, SIGKILL);
  close(caught[0]);
  close(caught[1]);
  EXPECT_EQ(left, 0) << "process " << left << " of the uid still shares the caller's memory";
  if (left == 0 && children_caught == 0)
    GTEST_SKIP() << "no probe was caught with its child in 20 s";
}

}  // namespace
}  // namespace skillmcp
