// The per-run uid allocator (broker/run/run_uids.h) and the process probe
// (broker/run/uid_probe.h): range parsing, the uid_map check, lock and release, two pools
// as two brokers, release when the holder is SIGKILLed, and skipping a uid whose
// processes are still alive.
#include "broker/run/run_uids.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "broker/run/uid_probe.h"

namespace skillmcp {
namespace {

TEST(ParseRunUidRange, AcceptsAnOrderedRangeBelowTwoToTheThirtyOne) {
  std::string why;
  std::optional<RunUidRange> r = ParseRunUidRange("1879048192-1879113727", &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->first, 1879048192u);
  EXPECT_EQ(r->last, 1879113727u);
  EXPECT_EQ(r->size(), 65536u);
  r = ParseRunUidRange("70000-70000", &why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->size(), 1u);
  EXPECT_TRUE(ParseRunUidRange("2147483000-2147483647", &why)) << why;
}

TEST(ParseRunUidRange, RefusesWhatCouldCollideOrIsMalformed) {
  for (const char* bad : {"", "-", "5", "5-", "-5", "a-b", "10-5", "0-100", "05-10", " 5-10",
                          "5-10 ", "5--10", "+5-10", "1-4294967295", "2147483647-2147483648",
                          "65000-65534", "65535-70000", "60000-70000", "1-2-3"}) {
    std::string why;
    EXPECT_FALSE(ParseRunUidRange(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(RangeMapped, WholeRangeMustBeInsideTheMaps) {
  const RunUidRange def = kDefaultRunUidRange;
  EXPECT_TRUE(RangeMapped("         0          0 4294967295\n", def));
  // A rootless container: 0 -> the user, 1..65536 -> subordinate ids.
  EXPECT_FALSE(RangeMapped("0 1000 1\n1 100000 65536\n", def));
  EXPECT_TRUE(RangeMapped("0 1000 1\n1 100000 65536\n", RunUidRange{70, 80}));
  // Covered only by the union of two lines, in any order.
  EXPECT_TRUE(RangeMapped("150 9000 100\n100 5000 50\n", RunUidRange{120, 240}));
  EXPECT_FALSE(RangeMapped("150 9000 100\n100 5000 49\n", RunUidRange{120, 240}));
  EXPECT_FALSE(RangeMapped("", RunUidRange{1, 1}));
  EXPECT_FALSE(RangeMapped("garbage\n", RunUidRange{1, 1}));
}

class PoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-uids-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // One pool is one broker: its own directory descriptor and its own lock descriptors.
  RunUidPool Pool(
      RunUidRange range, RunUidPool::InUseFn in_use = [](uint32_t) { return false; }) {
    return RunUidPool(UniqueFd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)), dir_, range,
                      std::move(in_use));
  }
  std::string dir_;
};

TEST_F(PoolTest, HandsOutEachUidOnceUntilReleased) {
  RunUidPool pool = Pool({70000, 70002});
  std::set<uint32_t> got;
  std::vector<RunUidLease> leases;
  for (int i = 0; i < 3; ++i) {
    RunUidPool::Acquired a = pool.Acquire();
    ASSERT_TRUE(a.lease) << a.error;
    EXPECT_TRUE(got.insert(a.lease->uid()).second) << a.lease->uid();
    EXPECT_TRUE(RunUidRange({70000, 70002}).contains(a.lease->uid()));
    leases.push_back(std::move(*a.lease));
  }
  EXPECT_EQ(pool.CountHeld(), 3u);
  RunUidPool::Acquired none = pool.Acquire();
  EXPECT_FALSE(none.lease);
  EXPECT_NE(none.error.find("every uid of the run range 70000-70002 is taken (3 by running"),
            std::string::npos)
      << none.error;
  const uint32_t freed = leases[1].uid();
  leases.erase(leases.begin() + 1);  // the lease ends: its lock is released
  EXPECT_EQ(pool.CountHeld(), 2u);
  RunUidPool::Acquired again = pool.Acquire();
  ASSERT_TRUE(again.lease) << again.error;
  EXPECT_EQ(again.lease->uid(), freed);
}

TEST_F(PoolTest, TwoBrokersNeverHoldTheSameUid) {
  RunUidPool a = Pool({70000, 70003});
  RunUidPool b = Pool({70000, 70003});
  std::vector<RunUidLease> leases;
  std::set<uint32_t> got;
  for (int i = 0; i < 4; ++i) {
    RunUidPool::Acquired x = (i % 2 ? a : b).Acquire();
    ASSERT_TRUE(x.lease) << x.error;
    EXPECT_TRUE(got.insert(x.lease->uid()).second) << x.lease->uid();
    leases.push_back(std::move(*x.lease));
  }
  EXPECT_FALSE(a.Acquire().lease);
  EXPECT_FALSE(b.Acquire().lease);
}

TEST_F(PoolTest, AKilledHoldersLockIsReleased) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Another broker: its own descriptors; it takes the only uid and is then killed.
    RunUidPool mine = Pool({70010, 70010});
    RunUidPool::Acquired a = mine.Acquire();
    char c = a.lease ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  ASSERT_EQ(c, 'y');
  RunUidPool pool = Pool({70010, 70010});
  EXPECT_FALSE(pool.Acquire().lease);
  EXPECT_EQ(pool.CountHeld(), 1u);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  RunUidPool::Acquired a = pool.Acquire();
  ASSERT_TRUE(a.lease) << a.error;
  EXPECT_EQ(a.lease->uid(), 70010u);
}

TEST_F(PoolTest, AUidWithLiveProcessesIsSkippedEvenWithItsLockFree) {
  RunUidPool pool = Pool({70020, 70021}, [](uint32_t uid) { return uid == 70020; });
  for (int i = 0; i < 8; ++i) {  // whatever the random start
    RunUidPool::Acquired a = pool.Acquire();
    ASSERT_TRUE(a.lease) << a.error;
    EXPECT_EQ(a.lease->uid(), 70021u);
  }
  RunUidPool all_busy = Pool({70020, 70020}, [](uint32_t) { return true; });
  RunUidPool::Acquired none = all_busy.Acquire();
  EXPECT_FALSE(none.lease);
  EXPECT_NE(none.error.find("1 by processes left from earlier runs"), std::string::npos)
      << none.error;
}

TEST_F(PoolTest, ALockFileThatIsALinkOrNotOursIsNeverUsed) {
  const std::string target = dir_ + "/elsewhere";
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/70030").c_str()), 0);
  RunUidPool pool = Pool({70030, 70030});
  EXPECT_FALSE(pool.Acquire().lease);
  EXPECT_FALSE(std::filesystem::exists(target));  // O_NOFOLLOW: nothing made through it
}

// The probe asks the kernel's per-uid process count; it needs CAP_SETUID.
TEST(ProbeUidProcesses, SeesAProcessOfTheUidAndItsEnd) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113000;  // inside the default range, used by nothing here
  EXPECT_EQ(ProbeUidProcesses(kUid), UidProcesses::kNone);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (syscall(SYS_setresuid, kUid, kUid, kUid) != 0) _exit(1);
    (void)!write(ready[1], "y", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  EXPECT_EQ(ProbeUidProcesses(kUid), UidProcesses::kSome);
  EXPECT_EQ(ProbeUidProcesses(kUid + 1), UidProcesses::kNone);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);  // a zombie still counts until it is reaped
  EXPECT_EQ(ProbeUidProcesses(kUid), UidProcesses::kNone);
}

// A run with namespaces: its processes live in a user namespace its uid created, where
// they are uid 0; the kernel still counts them against the creating uid.
TEST(ProbeUidProcesses, CountsAProcessInsideTheUidsUserNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID) to switch a probe's uid";
  constexpr uint32_t kUid = 1879113010;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (syscall(SYS_setresuid, kUid, kUid, kUid) != 0) _exit(1);
    char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  const UidProcesses seen = ProbeUidProcesses(kUid);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (c != 'y') GTEST_SKIP() << "unprivileged user namespaces are refused here";
  EXPECT_EQ(seen, UidProcesses::kSome);
  EXPECT_EQ(ProbeUidProcesses(kUid), UidProcesses::kNone);
}

}  // namespace
}  // namespace skillmcp
