// A worker started ahead of its run gets the script and skill directory descriptors with
// its description (SCM_RIGHTS on the fd-3 socket, broker/run/worker_pool.h). The real
// worker refuses anything but exactly two, sent once, into empty slots 6 and 7, at its
// first step and before doing anything else; the reaper spares the waiting worker.
#include "broker/run/worker_pool.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "broker/loop/event_loop.h"
#include "broker/run/reaper.h"
#include "broker/run/spawn.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

struct Outcome {
  std::optional<WorkerReport> report;
  int status = 0;
};

// Starts the real worker with a spec socket (and, when `inherited`, its own fd 6),
// sends `bytes` with `fds` attached (none: a plain write), closes, and collects.
Outcome Launch(const std::string& bytes, std::vector<int> fds, int inherited = -1) {
  UniqueFd worker(open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(worker.valid());
  SpawnRequest req;
  req.worker_fd = worker.get();
  req.spec_socket = true;
  req.script_fd = inherited;
  SpawnOutcome s = SpawnWorker(req);
  EXPECT_TRUE(s.spawned.has_value());
  Outcome o;
  if (!s.spawned) return o;
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  EXPECT_EQ(sendmsg(s.spawned->spec.get(), &msg, MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  s.spawned->spec.reset();
  std::string report;
  char buf[64];
  ssize_t n;
  while ((n = read(s.spawned->report.get(), buf, sizeof buf)) > 0)
    report.append(buf, static_cast<size_t>(n));
  waitpid(s.spawned->pid, &o.status, 0);
  o.report = DecodeWorkerReport(report);
  return o;
}

class SentDescriptors : public ::testing::Test {
 protected:
  void SetUp() override {
    file_.reset(open("/etc/hostname", O_RDONLY | O_CLOEXEC));
    dir_.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(file_.valid() && dir_.valid());
  }
  UniqueFd file_, dir_;
};

TEST_F(SentDescriptors, TwoIntoEmptySlotsPassTheReadStep) {
  // Not a valid description: the step fails at decoding (EINVAL), after the descriptors
  // were accepted (EBADMSG or EEXIST would say otherwise).
  Outcome o = Launch("not a spec", {file_.get(), dir_.get()});
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EINVAL);
}

// Four and more are the case where CMSG_SPACE's rounding fits them without truncation:
// refused like three, never copied past the receiver's array (a worker that aborts
// writes no report).
TEST_F(SentDescriptors, AnyCountButTwoIsRefused) {
  const int f = file_.get(), d = dir_.get();
  for (std::vector<int> fds : {std::vector<int>{f}, std::vector<int>{f, d, f},
                               std::vector<int>{f, d, f, d}, std::vector<int>{f, d, f, d, f},
                               std::vector<int>{f, d, f, d, f, d, f, d}}) {
    Outcome o = Launch("not a spec", fds);
    ASSERT_TRUE(o.report.has_value()) << fds.size();
    EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
    EXPECT_EQ(o.report->err, EBADMSG) << fds.size();
  }
}

TEST_F(SentDescriptors, SentAsWellAsInheritedIsRefused) {
  Outcome o = Launch("not a spec", {file_.get(), dir_.get()}, /*inherited=*/file_.get());
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EEXIST);
}

// A worker waiting for its description is not dumpable: its /proc files belong to root,
// so a process of its uid cannot open its memory or environ. Shown under a uid that is
// not root (as root, the test drops to 65534 in a child first), where a dumpable
// worker's /proc/<pid>/mem would belong to that uid.
TEST(WaitingWorker, IsNotDumpable) {
  UniqueFd worker(open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(worker.valid());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (getuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                          setresuid(65534, 65534, 65534) != 0))
      _exit(2);
    // The uid change made this process non-dumpable; the worker's fork starts as a copy,
    // so before its exec it must look dumpable, or the check below would pass early.
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) _exit(2);
    SpawnRequest req;
    req.worker_fd = worker.get();
    req.spec_socket = true;
    SpawnOutcome s = SpawnWorker(req);
    if (!s.spawned) _exit(3);
    const std::string mem = "/proc/" + std::to_string(s.spawned->pid) + "/mem";
    bool root_owned = false;
    for (int i = 0; i < 200 && !root_owned; ++i) {  // it sets the flag right after exec
      struct stat st {};
      root_owned = stat(mem.c_str(), &st) == 0 && st.st_uid == 0;
      if (!root_owned) usleep(10000);
    }
    kill(s.spawned->pid, SIGKILL);
    waitpid(s.spawned->pid, nullptr, 0);
    _exit(root_owned ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the waiting worker is dumpable; 2: no uid drop; "
                                       "3: no spawn";
}

// The reaper kills every child between runs but the one waiting for the next run.
TEST(ReaperSpareAlso, TheWaitingWorkerSurvivesASweep) {
  EventLoop loop;
  Reaper reaper(loop, [] { return -1; });
  const pid_t waiting = fork();
  if (waiting == 0) {
    pause();
    _exit(0);
  }
  const pid_t leftover = fork();
  if (leftover == 0) {
    pause();
    _exit(0);
  }
  struct KillBoth {  // whatever an assertion does, no test child outlives the test
    pid_t a, b;
    ~KillBoth() {
      for (pid_t p : {a, b}) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, WNOHANG);
      }
    }
  } guard{waiting, leftover};
  reaper.SpareAlso([waiting] { return waiting; });
  reaper.Sweep();
  // SIGKILL may take a moment to land: the reaper sweeps again from the loop until done.
  for (int i = 0; i < 100 && reaper.left() > 0; ++i) loop.RunOnce(20);
  EXPECT_EQ(reaper.left(), 0u);
  siginfo_t info{};
  EXPECT_EQ(waitid(P_PID, static_cast<id_t>(leftover), &info, WEXITED | WNOHANG), -1)
      << "the leftover was not reaped by the sweep";
  EXPECT_EQ(errno, ECHILD);
  info = {};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(waiting), &info, WEXITED | WNOHANG | WNOWAIT), 0);
  EXPECT_EQ(info.si_pid, 0) << "the waiting worker was killed";
}

}  // namespace
}  // namespace skillmcp
