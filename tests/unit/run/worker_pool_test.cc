// A worker started ahead of its run gets the script and skill directory descriptors with
// its description (SCM_RIGHTS on the fd-3 socket, broker/run/worker_pool.h). The real
// worker refuses anything but exactly two, sent once, into empty slots 6 and 7, at its
// first step and before doing anything else; the reaper spares the waiting worker.
#include "broker/run/worker_pool.h"

#include <dirent.h>
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
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "broker/loop/event_loop.h"
#include "broker/run/reaper.h"
#include "broker/run/spawn.h"
#include "shared/worker_protocol.h"
#include "tests/unit/run/started_worker.h"
#include "tests/unit/run/suid_dumpable.h"

namespace skillmcp {
namespace {

using namespace started_worker;  // NOLINT(google-build-using-namespace): the test helpers

// Starts the worker (StartWorker), sends `cell` (nullopt: none; by default the cell of a
// plain description), then `bytes` with `fds` attached, closes, and collects.
Outcome Launch(const std::string& bytes, std::vector<int> fds, int inherited = -1,
               std::optional<std::string> cell = EncodeCellSpec(CellOf(PlainSpec())).value()) {
  std::optional<Spawned> s = StartWorker(inherited);
  if (!s) return {};
  if (cell) SendWith(s->spec.get(), *cell, {});
  SendWith(s->spec.get(), bytes, fds);
  return Collect(*s);
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

// The third descriptor is a declared-mode run's egress channel: with any other run, or
// missing from one, the description is refused.
TEST_F(SentDescriptors, TheEgressChannelComesExactlyWithADeclaredRun) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  const std::string plain = EncodeRunSpec(PlainSpec()).value();
  Outcome o = Launch(plain, {file_.get(), dir_.get(), a.get()});
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EBADMSG);
  RunSpec declared = PlainSpec();
  declared.namespaces = true;
  declared.skill_dir_path = "/nonexistent";
  declared.egress_declared = true;
  o = Launch(EncodeRunSpec(declared).value(), {file_.get(), dir_.get()});
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EBADMSG);
}

TEST_F(SentDescriptors, SentAsWellAsInheritedIsRefused) {
  Outcome o = Launch("not a spec", {file_.get(), dir_.get()}, /*inherited=*/file_.get());
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EEXIST);
}

// The cell comes first and is bytes only: descriptors with it, a frame longer than the
// bound, one that is not a cell, or the socket closed inside it fail the read step.
TEST_F(SentDescriptors, DescriptorsWithTheCellAreRefused) {
  Outcome o = Launch(EncodeCellSpec(CellOf(PlainSpec())).value(), {file_.get(), dir_.get()}, -1,
                     std::nullopt);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EBADMSG);
}

TEST(CellFrame, TooLongIsRefusedBeforeItIsRead) {
  static_assert(kCellSpecMaxBytes + 1 == 0x1001, "the prefix below says kCellSpecMaxBytes + 1");
  Outcome o = Launch(std::string("\x01\x10\x00\x00", 4), {}, -1, std::nullopt);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EMSGSIZE);
}

TEST(CellFrame, NotACellIsRefused) {
  Outcome o = Launch(std::string{'\x03', '\0', '\0', '\0'} + "abc", {}, -1, std::nullopt);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EINVAL);
}

TEST(CellFrame, ClosedInsideTheCellIsRefused) {
  Outcome o = Launch(std::string{'\x10', '\0', '\0', '\0'} + "ab", {}, -1, std::nullopt);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EPIPE);
}

// What the worker set up ahead is what the run asked for: a description with another
// identity switch, or a probe, after a cell is refused at the read step; the same
// description for its own cell passes that step (and fails later: "node" here is
// /etc/hostname).
TEST_F(SentDescriptors, ADescriptionForAnotherCellIsRefused) {
  const RunSpec plain = PlainSpec();
  Outcome same = Launch(EncodeRunSpec(plain).value(), {file_.get(), dir_.get()});
  ASSERT_TRUE(same.report.has_value());
  EXPECT_NE(same.report->step, WorkerStep::kReadSpec) << "the control run did not pass reading";
  RunSpec switched = plain;
  switched.switch_ids = true;
  switched.uid = switched.gid = 4242;
  RunSpec probe;
  probe.probe = true;
  probe.seccomp = false;
  for (const RunSpec& other : {switched, probe}) {
    Outcome o = Launch(EncodeRunSpec(other).value(), {file_.get(), dir_.get()});
    ASSERT_TRUE(o.report.has_value());
    EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
    EXPECT_EQ(o.report->err, EINVAL);
  }
}

// The cell is read byte for byte: with the cell and all but the last byte of the
// description queued at once, the description still decodes (an over-read of the cell
// would take its first bytes); the descriptors come with the last byte.
TEST_F(SentDescriptors, TheCellReadTakesNoByteOfTheDescription) {
  std::optional<Spawned> s = StartWorker();
  ASSERT_TRUE(s.has_value());
  const std::string description = EncodeRunSpec(PlainSpec()).value();
  const std::string cell = EncodeCellSpec(CellOf(PlainSpec())).value();
  SendWith(s->spec.get(), cell + description.substr(0, description.size() - 1), {});
  SendWith(s->spec.get(), description.substr(description.size() - 1), {file_.get(), dir_.get()});
  Outcome o = Collect(*s);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_NE(o.report->step, WorkerStep::kReadSpec) << "errno " << o.report->err;
}

// Limits are the run's, applied once its description is read: one that leaves no room
// to receive 6 and 7 above the layout fails the run later, never the read step.
TEST_F(SentDescriptors, ATightDescriptorLimitDoesNotFailTheRead) {
  RunSpec tight = PlainSpec();
  tight.limits.nofile = 8;
  Outcome o = Launch(EncodeRunSpec(tight).value(), {file_.get(), dir_.get()});
  ASSERT_TRUE(o.report.has_value());
  EXPECT_NE(o.report->step, WorkerStep::kReadSpec) << "errno " << o.report->err;
}

// A started worker told its cell and not yet its run, as root switching to 65534.
class CellAhead : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the worker's switch to 65534 needs root";
    CellSpec cell;
    cell.switch_ids = true;
    cell.ids_ahead = true;
    cell.uid = 65534;
    cell.gid = 65534;
    Start(cell);
  }
  void Start(const CellSpec& cell) {
    spawned_ = StartWorker();
    ASSERT_TRUE(spawned_.has_value());
    SendWith(spawned_->spec.get(), EncodeCellSpec(cell).value(), {});
  }
  void Stop() {
    kill(spawned_->pid, SIGKILL);
    waitpid(spawned_->pid, nullptr, 0);
    spawned_.reset();
  }
  // Feeds a plain description that switches to `uid` and `gid` (Feed).
  Outcome FeedSwitchingTo(uint32_t uid, uint32_t gid) {
    RunSpec spec = PlainSpec();
    spec.switch_ids = true;
    spec.uid = uid;
    spec.gid = gid;
    return Feed(spec);
  }
  // Sends a description with a regular file and a directory as 6 and 7 and collects.
  Outcome Feed(const RunSpec& spec) {
    UniqueFd file(open("/etc/hostname", O_RDONLY | O_CLOEXEC));
    UniqueFd dir(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    SendWith(spawned_->spec.get(), EncodeRunSpec(spec).value(), {file.get(), dir.get()});
    Outcome o = Collect(*spawned_);
    spawned_.reset();
    return o;
  }
  // Session and process group its own, nothing open but 0..5 and the sealed bootstrap.
  bool SetUpAhead() const {
    for (int i = 0; i < 500; ++i) {
      const std::string stat = Proc("stat");
      std::istringstream rest(stat.substr(stat.rfind(')') + 2));
      std::string state;
      long ppid = 0, pgrp = 0, session = 0;
      rest >> state >> ppid >> pgrp >> session;
      if (session == spawned_->pid && pgrp == spawned_->pid &&
          Fds() == std::set<int>{0, 1, 2, 3, 4, 5, 8})
        return true;
      usleep(10000);
    }
    return false;
  }
  std::set<int> Fds() const {
    std::set<int> fds;
    const std::string dir = "/proc/" + std::to_string(spawned_->pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return fds;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
    closedir(d);
    return fds;
  }
  void TearDown() override {
    if (spawned_) Stop();
  }
  std::string Proc(const std::string& file) const {
    std::ifstream in("/proc/" + std::to_string(spawned_->pid) + "/" + file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Waits (at most 5 s) until the worker runs as 65534.
  bool Switched() const {
    for (int i = 0; i < 500; ++i) {
      if (Proc("status").find("\nUid:\t65534\t65534\t65534\t65534\n") != std::string::npos)
        return true;
      usleep(10000);
    }
    return false;
  }
  std::optional<Spawned> spawned_;
};

// The cell's steps come before the run: its own session, nothing open but 0..5 and the
// sealed bootstrap at 8, and the run's uid, while it still waits for its description.
TEST_F(CellAhead, TakesItsSessionDescriptorsAndIdentityWhileItWaits) {
  ASSERT_TRUE(Switched()) << Proc("status");
  EXPECT_TRUE(SetUpAhead()) << Proc("stat");
  EXPECT_EQ(Fds(), (std::set<int>{0, 1, 2, 3, 4, 5, 8}));
  // Its run: the same uid passes the read step (and fails at the exec of /etc/hostname).
  Outcome o = FeedSwitchingTo(65534, 65534);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kExec);
}

TEST_F(CellAhead, ADescriptionForAnotherUidIsRefused) {
  ASSERT_TRUE(Switched()) << Proc("status");
  Outcome o = FeedSwitchingTo(65533, 65534);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kReadSpec);
  EXPECT_EQ(o.report->err, EINVAL);
}

// Where the cell names no ids (the shared run-as uid, or a uid from a small range), the
// waiting worker takes its other steps as the broker's uid and switches once its
// description names the uid.
TEST_F(CellAhead, WithoutIdsAheadItSwitchesToTheUidItsRunNames) {
  Stop();
  CellSpec cell;
  cell.switch_ids = true;
  Start(cell);
  ASSERT_TRUE(spawned_.has_value());
  ASSERT_TRUE(SetUpAhead()) << Proc("stat");
  usleep(50000);
  EXPECT_NE(Proc("status").find("\nUid:\t0\t0\t0\t0\n"), std::string::npos) << Proc("status");
  Outcome o = FeedSwitchingTo(65534, 65534);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kExec);
  // The same cell with a description naming root is refused at the switch, as ever.
  Start(cell);
  ASSERT_TRUE(spawned_.has_value());
  o = FeedSwitchingTo(0, 0);
  ASSERT_TRUE(o.report.has_value());
  EXPECT_EQ(o.report->step, WorkerStep::kRefuseRootIds);
}

// The kernel resets the dumpable flag to fs.suid_dumpable at the switch; set to 1 (the
// host-wide sysctl only for the moment of the check), a worker that did not clear it
// again would wait with its /proc files owned by, and open to, the run's uid.
TEST_F(CellAhead, StaysClosedToItsUidWhereSuidDumpableIsOne) {
  Stop();  // this test starts its own, under the sysctl
  SuidDumpableOne one;
  if (!one.set()) GTEST_SKIP() << "fs.suid_dumpable cannot be set here (a read-only /proc/sys)";
  SetUp();
  ASSERT_TRUE(spawned_.has_value());
  const bool switched = Switched();
  const std::string mem = "/proc/" + std::to_string(spawned_->pid) + "/mem";
  bool root_owned = false;
  for (int i = 0; switched && i < 200 && !root_owned; ++i) {
    struct stat st {};
    root_owned = stat(mem.c_str(), &st) == 0 && st.st_uid == 0;
    if (!root_owned) usleep(10000);
  }
  EXPECT_TRUE(one.PutBack()) << "fs.suid_dumpable could not be put back to " << one.before();
  ASSERT_TRUE(switched);
  EXPECT_TRUE(root_owned) << "the waiting worker is dumpable under the run's uid";
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
