// The whole-run memory sampler (broker/run/run_memory.h): on a tree of real processes
// that allocate known amounts of anonymous memory, and on a fake /proc tree for what the
// kernel cannot be made to do on cue (a pid that vanishes or is reused mid-walk); the
// hidepid decision; the option.
#include "broker/run/run_memory.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "broker/run/launch_config.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// ---------------------------------------------------------------- parsing

TEST(ParseProcessMemory, SumsAnonAndShmemInBytes) {
  const char* status =
      "Name:\tnode\nState:\tS (sleeping)\nTgid:\t42\nPid:\t42\nPPid:\t7\nTracerPid:\t0\n"
      "VmRSS:\t  90000 kB\nRssAnon:\t   51200 kB\nRssFile:\t   38000 kB\n"
      "RssShmem:\t    1024 kB\nThreads:\t7\n";
  std::optional<ProcessMemory> m = ParseProcessMemory(status);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->has_memory);
  EXPECT_EQ(m->ppid, 7);
  EXPECT_EQ(m->bytes, (51200u + 1024u) * 1024u);  // RssFile (shared libraries) left out
}

TEST(ParseProcessMemory, AZombieHasNoMemoryAndNoStatusIsNothing) {
  std::optional<ProcessMemory> z =
      ParseProcessMemory("Name:\tnode\nState:\tZ (zombie)\nTgid:\t9\nPid:\t9\nPPid:\t3\n");
  ASSERT_TRUE(z);
  EXPECT_FALSE(z->has_memory);
  EXPECT_EQ(z->bytes, 0u);
  EXPECT_FALSE(ParseProcessMemory("Name:\tnode\nTracerPid:\t5\n"));  // no PPid line at all
  EXPECT_FALSE(ParseProcessMemory(""));
}

// ---------------------------------------------------------------- real processes

// RssAnon of this process, in bytes (what a freshly forked child starts with, at most).
uint64_t OwnAnon() {
  std::string text;
  int err = 0;
  if (!ReadSmallFile("/proc/self/status", &text, &err)) return 0;
  std::optional<ProcessMemory> m = ParseProcessMemory(text);
  return m ? m->bytes : 0;
}

// A child that forks the next level first, then touches mibs[level] MiB of private
// anonymous memory (after the fork: a page shared copy-on-write with a parent would count
// in both), reports ready on `ready_w` and sleeps. Level 0 leads a process group of its
// own, so the whole chain dies by one kill. Returns the child's pid.
pid_t Allocator(const std::vector<size_t>& mibs, size_t level, int ready_w) {
  pid_t pid = fork();
  if (pid != 0) {
    if (level == 0) setpgid(pid, pid);
    return pid;
  }
  if (level == 0) setpgid(0, 0);
  if (level + 1 < mibs.size()) Allocator(mibs, level + 1, ready_w);
  void* p =
      mmap(nullptr, mibs[level] * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) _exit(1);
  memset(p, 0x5a, mibs[level] * kMiB);  // touched: resident and counted in RssAnon
  char c = 'r';
  (void)!write(ready_w, &c, 1);
  for (;;) pause();
}

class RealTree : public ::testing::Test {
 protected:
  // A chain root -> child -> grandchild touching 64, 32 and 16 MiB.
  void SetUp() override {
    ASSERT_EQ(pipe(ready_), 0);
    root_ = Allocator({64, 32, 16}, 0, ready_[1]);
    ASSERT_GT(root_, 0);
    for (int i = 0; i < 3; ++i) {
      char c;
      ASSERT_EQ(read(ready_[0], &c, 1), 1) << "an allocator did not get ready";
    }
  }
  void TearDown() override {
    kill(-root_, SIGKILL);  // the chain's own group
    waitpid(root_, nullptr, 0);
    close(ready_[0]);
    close(ready_[1]);
  }
  int ready_[2] = {-1, -1};
  pid_t root_ = -1;
};

TEST_F(RealTree, SumsEveryProcessOfTheTreeWithinTolerance) {
  RunMemorySample s = SampleRunMemory({root_}, 1000);
  EXPECT_TRUE(s.root_seen);
  EXPECT_FALSE(s.capped);
  EXPECT_EQ(s.processes, 3u);
  // Each process holds its own allocation plus at most what it inherited from this one.
  const uint64_t touched = (64 + 32 + 16) * kMiB;
  EXPECT_GE(s.bytes, touched);
  EXPECT_LE(s.bytes, touched + 3 * (OwnAnon() + 8 * kMiB)) << s.bytes / kMiB << " MiB";
}

TEST_F(RealTree, VanishedRootIsSkipped) {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);  // reaped: no /proc entry any more
  RunMemorySample alone = SampleRunMemory({root_}, 1000);
  RunMemorySample with_gone = SampleRunMemory({gone, root_}, 1000);
  EXPECT_FALSE(with_gone.root_seen);  // the first root is the one that vanished
  EXPECT_EQ(with_gone.processes, 3u);
  EXPECT_GE(with_gone.bytes, (64 + 32 + 16) * kMiB);
  EXPECT_TRUE(alone.root_seen);
}

TEST_F(RealTree, TheVisitCapStopsTheWalk) {
  RunMemorySample one = SampleRunMemory({root_}, 1);  // the root's status only
  EXPECT_TRUE(one.capped);
  EXPECT_EQ(one.visits, 1u);
  EXPECT_EQ(one.processes, 1u);
  EXPECT_GE(one.bytes, 64 * kMiB);
  EXPECT_LT(one.bytes, 64 * kMiB + OwnAnon() + 8 * kMiB);
  RunMemorySample some = SampleRunMemory({root_}, 3);  // root status, its thread, child status
  EXPECT_TRUE(some.capped);
  EXPECT_EQ(some.visits, 3u);
  EXPECT_EQ(some.processes, 2u);
}

TEST(RealZombie, AZombieDescendantCountsNothing) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t parent = fork();
  if (parent == 0) {
    pid_t z = fork();
    if (z == 0) _exit(0);  // never reaped by its parent: a zombie under it
    siginfo_t info{};
    waitid(P_PID, static_cast<id_t>(z), &info, WEXITED | WNOWAIT);
    (void)!write(ready[1], &z, sizeof z);
    for (;;) pause();
  }
  pid_t zombie = -1;
  ASSERT_EQ(read(ready[0], &zombie, sizeof zombie), static_cast<ssize_t>(sizeof zombie));
  RunMemorySample s = SampleRunMemory({parent}, 100);
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  waitpid(zombie, nullptr, WNOHANG);  // ours now if this process is a subreaper
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(s.processes, 1u) << "the zombie " << zombie << " has no memory to count";
}

// ---------------------------------------------------------------- a fake /proc

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("skill-mcp-run-memory-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Process `pid` under `ppid` with `kib` KiB of RssAnon and, per thread, its children.
  void Add(pid_t pid, pid_t ppid, uint64_t kib, const std::vector<std::string>& threads) {
    fs::path p = dir_ / std::to_string(pid);
    fs::create_directories(p / "task");
    std::ofstream(p / "status") << "Name:\tnode\nPid:\t" << pid << "\nPPid:\t" << ppid
                                << "\nRssAnon:\t" << kib << " kB\nRssShmem:\t0 kB\n";
    for (size_t i = 0; i < threads.size(); ++i) {
      fs::create_directories(p / "task" / std::to_string(pid + i));
      std::ofstream(p / "task" / std::to_string(pid + i) / "children") << threads[i];
    }
  }
  RunMemorySample Sample(std::vector<pid_t> roots, size_t cap = 1000) {
    return SampleRunMemory(roots, cap, dir_.string());
  }
  fs::path dir_;
};

TEST_F(FakeProc, ChildrenOfEveryThreadAreWalked) {
  Add(100, 1, 1024, {"200 ", "300 400 "});  // children forked from two threads
  Add(200, 100, 2048, {""});
  Add(300, 100, 4096, {"500"});
  Add(400, 100, 8192, {""});
  Add(500, 300, 16384, {""});
  RunMemorySample s = Sample({100});
  EXPECT_EQ(s.processes, 5u);
  EXPECT_EQ(s.bytes, (1024u + 2048 + 4096 + 8192 + 16384) * 1024);
  EXPECT_TRUE(s.root_seen);
}

TEST_F(FakeProc, AVanishedChildIsSkipped) {
  Add(100, 1, 1024, {"200 250 300"});  // 250 is listed, but gone before its status is read
  Add(200, 100, 2048, {""});
  Add(300, 100, 4096, {""});
  RunMemorySample s = Sample({100});
  EXPECT_EQ(s.processes, 3u);
  EXPECT_EQ(s.bytes, (1024u + 2048 + 4096) * 1024);
}

TEST_F(FakeProc, AReusedPidUnderAnotherParentIsNotTheRuns) {
  // 200 was the run's child, died, and its pid went to a stranger (parent 77) with a
  // subtree of its own: neither is counted.
  Add(100, 1, 1024, {"200"});
  Add(200, 77, 999999, {"201"});
  Add(201, 200, 999999, {""});
  RunMemorySample s = Sample({100});
  EXPECT_EQ(s.processes, 1u);
  EXPECT_EQ(s.bytes, 1024u * 1024);
}

TEST_F(FakeProc, AdoptedRootsCountAndNothingTwice) {
  // 300 is both a root and listed as 100's child: counted once.
  Add(100, 1, 1024, {"300"});
  Add(300, 100, 2048, {""});
  Add(400, 1, 4096, {""});
  RunMemorySample s = Sample({100, 400, 300});
  EXPECT_EQ(s.processes, 3u);
  EXPECT_EQ(s.bytes, (1024u + 2048 + 4096) * 1024);
}

TEST_F(FakeProc, TheCapBoundsTheReadsOfAHugeTree) {
  std::string kids;
  for (pid_t p = 1000; p < 1100; ++p) {
    kids += std::to_string(p) + " ";
    Add(p, 100, 1, {""});
  }
  Add(100, 1, 1, {kids});
  RunMemorySample s = Sample({100}, 64);
  EXPECT_TRUE(s.capped);
  EXPECT_EQ(s.visits, 64u);
  EXPECT_LT(s.processes, 64u);
  RunMemorySample all = Sample({100}, 10000);
  EXPECT_FALSE(all.capped);
  EXPECT_EQ(all.processes, 101u);
}

// The heavy processes first, then many idle ones: the depth-first walk reaches the
// oldest child last, so a capped sample misses the memory. It is judged a breach.
TEST_F(FakeProc, ACappedSampleIsABreachWhateverItCounted) {
  std::string kids;
  for (pid_t p = 1000; p < 1100; ++p) {
    kids += std::to_string(p) + " ";
    Add(p, 100, p == 1000 ? 10u << 20 : 1, {""});  // 1000: the oldest, 10 GiB
  }
  Add(100, 1, 1, {kids});
  RunMemorySample capped = Sample({100}, 64);
  ASSERT_TRUE(capped.capped);
  EXPECT_LT(capped.bytes, kMiB) << "the heavy child is reached last";
  EXPECT_EQ(JudgeRunMemory(capped, 256 * kMiB), RunMemoryVerdict::kTooMany);
  RunMemorySample all = Sample({100}, 10000);
  EXPECT_EQ(JudgeRunMemory(all, 256 * kMiB), RunMemoryVerdict::kOver);
  EXPECT_EQ(JudgeRunMemory(all, 20 * 1024 * kMiB), RunMemoryVerdict::kUnder);
  RunMemorySample blind = Sample({99}, 10000);  // no such root
  EXPECT_EQ(JudgeRunMemory(blind, 256 * kMiB), RunMemoryVerdict::kBlind);
}

TEST_F(FakeProc, FailedAndSkippedReadsCountWithinTheBudget) {
  // 100 lists 50 pids that are gone and 50 strangers (another parent): none is counted,
  // every one of them costs a read of the budget.
  std::string kids;
  for (pid_t p = 1000; p < 1100; ++p) {
    kids += std::to_string(p) + " ";
    if (p >= 1050) Add(p, 77, 1, {""});
  }
  Add(100, 1, 1, {kids});
  RunMemorySample all = Sample({100}, 10000);
  EXPECT_FALSE(all.capped);
  EXPECT_EQ(all.processes, 1u);
  EXPECT_EQ(all.visits, 102u);  // status + children of 100, then 100 status reads
  RunMemorySample capped = Sample({100}, 101);
  EXPECT_TRUE(capped.capped);
  EXPECT_EQ(JudgeRunMemory(capped, 256 * kMiB), RunMemoryVerdict::kTooMany);
}

TEST(RunMemoryVisitCap, TwiceNprocUpToTheCeiling) {
  EXPECT_EQ(RunMemoryVisitCap(1), 2u);
  EXPECT_EQ(RunMemoryVisitCap(256), 512u);
  EXPECT_EQ(RunMemoryVisitCap(2048), 4096u);
  EXPECT_EQ(RunMemoryVisitCap(2049), kRunMemoryMaxVisits);
  EXPECT_EQ(RunMemoryVisitCap(UINT64_MAX), kRunMemoryMaxVisits);
}

// ---------------------------------------------------------------- the period

TEST(NextRunMemorySampleMs, TenTimesTheCostOrTheBasePeriod) {
  EXPECT_EQ(NextRunMemorySampleMs(0), kRunMemorySampleMs);
  EXPECT_EQ(NextRunMemorySampleMs(-5), kRunMemorySampleMs);      // a clock oddity
  EXPECT_EQ(NextRunMemorySampleMs(350000), kRunMemorySampleMs);  // 0.35 ms: 3.5 ms < 50
  EXPECT_EQ(NextRunMemorySampleMs(5000000), 50);                 // 5 ms: exactly 50
  EXPECT_EQ(NextRunMemorySampleMs(5000001), 51);                 // rounded up, never under 10x
  EXPECT_EQ(NextRunMemorySampleMs(12000000), 120);               // 12 ms: 120 ms
  EXPECT_EQ(NextRunMemorySampleMs(int64_t{3} * 1000000000), 30000);
}

// ---------------------------------------------------------------- children files

TEST_F(FakeProc, NoChildrenFilesMeansBlind) {
  fs::create_directories(dir_ / "self" / "task" / "4242");
  const std::string blind = ProcChildrenBlindness(dir_.string(), 4242);
  EXPECT_NE(blind.find("CONFIG_PROC_CHILDREN"), std::string::npos) << blind;
  EXPECT_NE(blind.find("MemoryMax="), std::string::npos) << blind;
  std::ofstream(dir_ / "self" / "task" / "4242" / "children") << "";
  EXPECT_EQ(ProcChildrenBlindness(dir_.string(), 4242), "");
  EXPECT_NE(ProcChildrenBlindness(dir_.string(), 4243), "");  // another thread's is not ours
  // Blind for this reason, the bound is off by default and a set limit refuses runs.
  LaunchConfig c;
  c.limits.data = kMiB;
  EnvStore env;
  env.Set("SKILL_MCP_LIMIT_RUN_MEMORY_MB", "512");
  const std::string none = ProcChildrenBlindness((dir_ / "none").string(), 1);
  ASSERT_EQ(ResolveRunMemory(env, none, c), "");
  EXPECT_EQ(c.run_memory_bytes, 0u);
  EXPECT_NE(RunMemoryRefusal(c).find("CONFIG_PROC_CHILDREN"), std::string::npos);
}

TEST(ProcChildrenBlindness, ThisHostHasThem) {
  if (access(("/proc/self/task/" + std::to_string(gettid()) + "/children").c_str(), F_OK) != 0)
    GTEST_SKIP() << "this kernel has no CONFIG_PROC_CHILDREN";
  EXPECT_EQ(ProcChildrenBlindness("/proc", gettid()), "");
}

// ---------------------------------------------------------------- hidepid

constexpr char kPlainProc[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n";
constexpr char kHiddenProc[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "90 22 0:60 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw,hidepid=invisible\n";

TEST(RunMemoryBlindness, SeenUnlessProcHidesOtherProcesses) {
  EXPECT_EQ(RunMemoryBlindness(kPlainProc, false), "");
  const std::string hidden = RunMemoryBlindness(kHiddenProc, false);
  EXPECT_NE(hidden.find("hidepid=invisible"), std::string::npos) << hidden;
  EXPECT_EQ(RunMemoryBlindness(kHiddenProc, true), "");  // CAP_SYS_PTRACE sees through it
  EXPECT_NE(RunMemoryBlindness("5 1 0:4 / /proc rw - proc proc rw,hidepid=2\n", false), "");
  EXPECT_EQ(RunMemoryBlindness("5 1 0:4 / /proc rw - proc proc rw,hidepid=0\n", false), "");
  EXPECT_EQ(RunMemoryBlindness("5 1 0:4 / /proc rw - proc proc rw,hidepid=off\n", false), "");
  // A hidepid mount elsewhere (a container's /proc seen from outside) is not the broker's.
  EXPECT_EQ(RunMemoryBlindness(
                std::string(kPlainProc) + "91 27 0:61 / /srv/c/proc rw - proc proc rw,hidepid=2\n",
                false),
            "");
}

TEST(RunMemoryBlindness, ThisProcessSeesItsChildrenHere) {
  // The test host's /proc has no hidepid and is of this pid namespace (the tree tests
  // above read it); a reason here would turn the bound off on every such host.
  std::string mountinfo;
  int err = 0;
  ASSERT_TRUE(ReadSmallFile("/proc/self/mountinfo", &mountinfo, &err));
  if (!RunMemoryBlindness(mountinfo, false).empty()) GTEST_SKIP() << "this /proc has hidepid";
  EXPECT_EQ(OwnRunMemoryBlindness(), "");
}

// In a child with its own mount namespace and a /proc mounted hidepid=invisible: what
// OwnRunMemoryBlindness says with CAP_SYS_PTRACE effective, then without it. Exit codes:
// 0 "" then the hidepid reason (as expected), 77 no private hidepid /proc here, others a
// wrong answer.
int OwnBlindnessUnderHidepidInChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0)
      _exit(77);
    if (!OwnRunMemoryBlindness().empty()) _exit(1);  // CAP_SYS_PTRACE sees through it
    cap_t caps = cap_get_proc();
    const cap_value_t ptrace[] = {CAP_SYS_PTRACE};
    if (caps == nullptr || cap_set_flag(caps, CAP_EFFECTIVE, 1, ptrace, CAP_CLEAR) != 0 ||
        cap_set_proc(caps) != 0)
      _exit(2);
    cap_free(caps);
    const std::string without = OwnRunMemoryBlindness();
    _exit(without.find("hidepid=invisible") != std::string::npos ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

// The capability branch of the real decision: the broker's own effective set decides
// whether a hidepid /proc blinds it.
TEST(RunMemoryBlindness, OwnDecisionFollowsTheEffectiveCapSysPtrace) {
  cap_t caps = cap_get_proc();
  cap_flag_value_t admin = CAP_CLEAR, ptrace = CAP_CLEAR;
  if (caps != nullptr) {
    cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &admin);
    cap_get_flag(caps, CAP_SYS_PTRACE, CAP_EFFECTIVE, &ptrace);
    cap_free(caps);
  }
  if (admin != CAP_SET || ptrace != CAP_SET)
    GTEST_SKIP() << "mounting a hidepid /proc and holding CAP_SYS_PTRACE need root";
  const int r = OwnBlindnessUnderHidepidInChild();
  if (r == 77) GTEST_SKIP() << "no private /proc with hidepid could be mounted here";
  EXPECT_NE(r, 1) << "blind although CAP_SYS_PTRACE is effective";
  EXPECT_NE(r, 2) << "CAP_SYS_PTRACE could not be dropped";
  EXPECT_NE(r, 3) << "not blind although CAP_SYS_PTRACE is not effective";
  EXPECT_EQ(r, 0);
}

// ---------------------------------------------------------------- the option

TEST(ResolveRunMemory, DefaultIsTwiceTheDataLimit) {
  EnvStore env;
  LaunchConfig c;
  c.limits.data = 128 * kMiB;
  ASSERT_EQ(ResolveRunMemory(env, "", c), "");
  EXPECT_EQ(c.run_memory_bytes, 256 * kMiB);
  EXPECT_FALSE(c.run_memory_demanded);
  EXPECT_EQ(RunMemoryRefusal(c), "");
}

TEST(ResolveRunMemory, ExplicitOffAndBadValues) {
  LaunchConfig c;
  c.limits.data = kMiB;
  EnvStore env;
  env.Set("SKILL_MCP_LIMIT_RUN_MEMORY_MB", "300");
  ASSERT_EQ(ResolveRunMemory(env, "", c), "");
  EXPECT_EQ(c.run_memory_bytes, 300 * kMiB);
  EXPECT_TRUE(c.run_memory_demanded);
  for (const char* off : {"0", "off"}) {
    env.Set("SKILL_MCP_LIMIT_RUN_MEMORY_MB", off);
    ASSERT_EQ(ResolveRunMemory(env, "", c), "");
    EXPECT_EQ(c.run_memory_bytes, 0u);
    EXPECT_FALSE(c.run_memory_demanded);
    EXPECT_NE(c.run_memory_off_reason.find(off), std::string::npos) << c.run_memory_off_reason;
    EXPECT_EQ(RunMemoryRefusal(c), "");
  }
  for (const char* bad : {"-1", "12MB", "007", "1.5", "18446744073709551615"}) {
    env.Set("SKILL_MCP_LIMIT_RUN_MEMORY_MB", bad);
    std::string e = ResolveRunMemory(env, "", c);
    EXPECT_NE(e.find("SKILL_MCP_LIMIT_RUN_MEMORY_MB"), std::string::npos) << bad << ": " << e;
  }
}

TEST(ResolveRunMemory, BlindBrokerIsOffByDefaultAndRefusesRunsWhenDemanded) {
  LaunchConfig c;
  c.limits.data = kMiB;
  EnvStore env;
  ASSERT_EQ(ResolveRunMemory(env, "/proc hides them", c), "");
  EXPECT_EQ(c.run_memory_bytes, 0u);
  EXPECT_EQ(c.run_memory_off_reason, "/proc hides them");
  EXPECT_EQ(RunMemoryRefusal(c), "");  // the default bound: off, runs go on
  env.Set("SKILL_MCP_LIMIT_RUN_MEMORY_MB", "512");
  ASSERT_EQ(ResolveRunMemory(env, "/proc hides them", c), "");
  EXPECT_EQ(c.run_memory_bytes, 0u);
  const std::string refusal = RunMemoryRefusal(c);  // demanded: fail closed
  EXPECT_NE(refusal.find("/proc hides them"), std::string::npos) << refusal;
}

}  // namespace
}  // namespace skillmcp
