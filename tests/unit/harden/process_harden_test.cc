#include "broker/harden/process_harden.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tests/unit/harden/child.h"

namespace skillmcp {
namespace {

using testing::InChild;

TEST(HardenProcess, MakesTheProcessNonDumpableWithoutCores) {
  int rc = InChild([] {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // start from the opposite
    rlimit big{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &big);
    ProcessHardening h = HardenProcess();
    if (!h.dumpable_off || !h.core_off || !h.sigpipe_ignored || !h.std_fds_ok) return 1;
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) return 2;
    rlimit core{};
    getrlimit(RLIMIT_CORE, &core);
    if (core.rlim_cur != 0 || core.rlim_max != 0) return 3;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(HardenProcess, SigpipeGivesEpipeInsteadOfDeath) {
  int rc = InChild([] {
    HardenProcess();
    int p[2];
    if (pipe(p) != 0) return 1;
    close(p[0]);
    ssize_t n = write(p[1], "x", 1);
    return (n < 0 && errno == EPIPE) ? 0 : 2;
  });
  EXPECT_EQ(rc, 0);  // 128+SIGPIPE if the signal were not ignored
}

TEST(HardenProcess, ReopensMissingStandardFdsOnDevNull) {
  int rc = InChild([] {
    close(0);
    close(2);
    int opened = 0;
    if (!EnsureStdFds(&opened) || opened != 2) return 1;
    char target[64] = {};
    for (int fd : {0, 2}) {
      std::string link = "/proc/self/fd/" + std::to_string(fd);
      ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) return 2;
      target[n] = '\0';
      if (std::strcmp(target, "/dev/null") != 0) return 3;
    }
    // The next descriptor opened lands above 2, never on a standard stream.
    int fd = open("/dev/null", O_RDONLY);
    return fd > 2 ? 0 : 4;
  });
  EXPECT_EQ(rc, 0);
}

// A process that hardened itself, and an attacker under the same uid (nobody when we
// are root, else our own uid): environ, mem, ptrace and process_vm_readv all refused.
// The control (the same target without PR_SET_DUMPABLE 0) shows the environ read works,
// so the test fails if the rule is removed.
struct Target {
  pid_t pid = -1;
  int release_fd = -1;
};

Target StartTarget(bool harden, uid_t uid) {
  int ready[2], release[2];
  if (pipe(ready) != 0 || pipe(release) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(release[1]);
    if (getuid() == 0 && (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)) _exit(1);
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // a uid change cleared it; start dumpable
    if (harden) HardenProcess();
    (void)!write(ready[1], "r", 1);
    char c;
    (void)!read(release[0], &c, 1);
    _exit(0);
  }
  close(ready[1]);
  close(release[0]);
  char c;
  (void)!read(ready[0], &c, 1);
  close(ready[0]);
  return {pid, release[1]};
}

void StopTarget(Target t) {
  close(t.release_fd);
  int status;
  waitpid(t.pid, &status, 0);
}

// Bit 0: environ readable, bit 1: mem readable, bit 2: ptrace attach worked,
// bit 3: process_vm_readv worked.
int Attack(pid_t target, uid_t uid) {
  return InChild([&] {
    if (getuid() == 0 && (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0))
      return 64;
    int got = 0;
    std::string base = "/proc/" + std::to_string(target);
    char buf[64];
    int fd = open((base + "/environ").c_str(), O_RDONLY);
    if (fd >= 0 && read(fd, buf, sizeof buf) >= 0) got |= 1;
    fd = open((base + "/mem").c_str(), O_RDONLY);
    if (fd >= 0) got |= 2;
    if (ptrace(PTRACE_ATTACH, target, nullptr, nullptr) == 0) {
      got |= 4;
      int st;
      waitpid(target, &st, __WALL);  // the attach stop must land before a detach
      ptrace(PTRACE_DETACH, target, nullptr, nullptr);
    }
    iovec local{buf, sizeof buf};
    iovec remote{reinterpret_cast<void*>(&buf), sizeof buf};  // same layout after fork
    if (process_vm_readv(target, &local, 1, &remote, 1, 0) >= 0) got |= 8;
    return got;
  });
}

uid_t AttackerUid() { return getuid() == 0 ? 65534 : getuid(); }

TEST(HardenProcess, SameUidCannotReadOrTraceAHardenedProcess) {
  Target t = StartTarget(true, AttackerUid());
  ASSERT_GT(t.pid, 0);
  int got = Attack(t.pid, AttackerUid());
  StopTarget(t);
  EXPECT_EQ(got, 0) << "bits: 1 environ, 2 mem, 4 ptrace, 8 process_vm_readv";
}

TEST(HardenProcess, ControlWithoutHardeningSameUidReadsEnviron) {
  Target t = StartTarget(false, AttackerUid());
  ASSERT_GT(t.pid, 0);
  int got = Attack(t.pid, AttackerUid());
  StopTarget(t);
  ASSERT_NE(got, 64) << "could not switch the attacker's uid";
  EXPECT_TRUE(got & 1)
      << "the control should be readable; the hardened test proves nothing otherwise";
}

}  // namespace
}  // namespace skillmcp
