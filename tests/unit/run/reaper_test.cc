// The reaper on the real kernel: a subreaper inherits orphans, and a sweep kills and
// reaps every child except the active run's group.
#include "broker/run/reaper.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace skillmcp {
namespace {

bool Has(const std::vector<pid_t>& v, pid_t p) { return std::find(v.begin(), v.end(), p) != v.end(); }

// Forks a child that forks a grandchild (which, if `own_group`, leads a new session)
// and exits. Returns the grandchild's pid; the child is reaped here.
pid_t Orphan(bool own_group) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    pid_t gc = fork();
    if (gc == 0) {
      if (own_group) setsid();
      for (;;) pause();
    }
    (void)!write(fds[1], &gc, sizeof gc);
    _exit(0);
  }
  close(fds[1]);
  pid_t gc = -1;
  if (read(fds[0], &gc, sizeof gc) != sizeof gc) gc = -1;
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return gc;
}

pid_t Sleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // a group of its own, like a worker after setsid()
    for (;;) pause();
  }
  setpgid(pid, pid);  // here too, so the group exists whichever runs first
  return pid;
}

class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(BecomeSubreaper()) << strerror(errno); }
  void TearDown() override {
    for (pid_t p : ListChildren()) kill(p, SIGKILL);
    while (waitpid(-1, nullptr, 0) > 0) {
    }
  }
  // Runs the loop until the reaper has nothing left or `ms` passed.
  void Settle(Reaper& r, int64_t ms) {
    const int64_t end = EventLoop::NowMs() + ms;
    while (r.left() > 0 && EventLoop::NowMs() < end) loop_.RunOnce(20);
  }
  EventLoop loop_;
};

TEST_F(ReaperTest, ListsChildrenIncludingZombies) {
  pid_t live = Sleeper();
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(dead), &info, WEXITED | WNOWAIT), 0);  // a zombie
  std::vector<pid_t> kids = ListChildren();
  EXPECT_TRUE(Has(kids, live));
  EXPECT_TRUE(Has(kids, dead));
  EXPECT_FALSE(Has(kids, getpid()));
}

// The reason for PR_SET_CHILD_SUBREAPER: without it the orphan would go to init.
TEST_F(ReaperTest, AnOrphanReparentsToTheSubreaper) {
  pid_t gc = Orphan(true);
  ASSERT_GT(gc, 0);
  EXPECT_TRUE(Has(ListChildren(), gc));
}

TEST_F(ReaperTest, SweepKillsAndReapsOrphansThatLeftTheirGroup) {
  pid_t a = Orphan(true);
  pid_t b = Orphan(false);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  Reaper reaper(loop_, [] { return pid_t{-1}; });
  reaper.Sweep();
  Settle(reaper, 3000);
  EXPECT_EQ(reaper.left(), 0u);
  EXPECT_EQ(reaper.reaped(), 2u);
  EXPECT_TRUE(ListChildren().empty());
  EXPECT_EQ(kill(a, 0), -1);
  EXPECT_EQ(kill(b, 0), -1);
}

TEST_F(ReaperTest, SweepSparesTheActiveRunAndItsGroup) {
  pid_t run = Sleeper();
  // A member of the run's group that is our child: an orphan of the active run.
  pid_t member = fork();
  if (member == 0) {
    for (;;) pause();
  }
  ASSERT_EQ(setpgid(member, run), 0) << strerror(errno);
  pid_t leftover = Sleeper();
  Reaper reaper(loop_, [run] { return run; });
  reaper.Sweep();
  Settle(reaper, 3000);
  std::vector<pid_t> kids = ListChildren();
  EXPECT_TRUE(Has(kids, run));
  EXPECT_TRUE(Has(kids, member));
  EXPECT_FALSE(Has(kids, leftover));
  EXPECT_EQ(reaper.reaped(), 1u);
}

// The active run's leader before its setsid() is still in our own group: spared by pid.
TEST_F(ReaperTest, SweepSparesTheActiveLeaderStillInOurGroup) {
  pid_t run = fork();
  if (run == 0) {
    for (;;) pause();
  }
  Reaper reaper(loop_, [run] { return run; });
  reaper.Sweep();
  EXPECT_TRUE(Has(ListChildren(), run));
  EXPECT_EQ(reaper.reaped(), 0u);
}

TEST_F(ReaperTest, SweepAndWaitLeavesNoChild) {
  for (int i = 0; i < 5; ++i) ASSERT_GT(Orphan(i % 2 == 0), 0);
  Reaper reaper(loop_, [] { return pid_t{-1}; });
  EXPECT_TRUE(reaper.SweepAndWait(3000));
  EXPECT_TRUE(ListChildren().empty());
  EXPECT_EQ(reaper.reaped(), 5u);
}

}  // namespace
}  // namespace skillmcp
