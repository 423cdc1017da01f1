// The worker's pure helpers: argv building and the limit plan; the parent-death step.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared/run_limits_default.h"
#include "worker/cell.h"
#include "worker/exec.h"
#include "worker/limits.h"
#include "worker/node_bootstrap.h"
#include "worker/python_bootstrap.h"

namespace skillmcp::worker {
namespace {

TEST(BuildArgv, NodeScriptPutsPathAndArgsAfterTheOptionEnd) {
  RunSpec s;
  s.script_path = "/skills/a/--eval=process.exit(7)";
  s.args = {"--inspect", "-e", "x y"};
  const auto argv = BuildArgv(s, BootstrapVia::kEval);
  ASSERT_EQ(argv.size(), 8u);
  EXPECT_EQ(argv[1], "-e");
  EXPECT_EQ(argv[2], kNodeBootstrap);
  EXPECT_EQ(argv[3], "--");  // nothing after this is a node option
  EXPECT_EQ(argv[4], s.script_path);
  EXPECT_EQ(argv[5], "--inspect");
  EXPECT_EQ(argv[7], "x y");
}

TEST(BuildArgv, MainFdWayEndsNodeOptionsAtTheBootstrapPath) {
  RunSpec s;
  s.script_path = "/skills/a/--eval=process.exit(7)";
  s.args = {"--inspect", "-e", "x y"};
  const auto argv = BuildArgv(s, BootstrapVia::kMainFd);
  ASSERT_EQ(argv.size(), 7u);
  EXPECT_EQ(argv[1], "--preserve-symlinks-main");
  EXPECT_EQ(argv[2], "/proc/self/fd/8");  // the main module: node's options end here
  EXPECT_EQ(argv[3], s.script_path);
  EXPECT_EQ(argv[4], "--inspect");
  EXPECT_EQ(argv[6], "x y");
}

// python3: isolated, no bytecode, fixed -X options, the bootstrap as -c's program; the
// path and the arguments after it only reach sys.argv, whatever they look like.
TEST(BuildArgv, Python3RunsTheBootstrapIsolatedWithThePinnedPath) {
  RunSpec s;
  s.interpreter = InterpreterKind::kPython3;
  s.interpreter_path = "/usr/bin/python3.11";
  s.script_path = "/skills/a/-m";
  s.args = {"-c", "import os", "-I"};
  for (BootstrapVia via : {BootstrapVia::kEval, BootstrapVia::kMainFd}) {
    const auto argv = BuildArgv(s, via);
    EXPECT_EQ(argv, (std::vector<std::string>{"/usr/bin/python3.11", "-I", "-B", "-X",
                                              "frozen_modules=on", "-c", kPythonBootstrap,
                                              "/skills/a/-m", "-c", "import os", "-I"}));
  }
}

TEST(PlanLimits, CoreIsAlwaysZeroAndZeroFieldsAreSkipped) {
  const auto plan = PlanLimits(RunLimits{});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].resource, RLIMIT_CORE);
  EXPECT_EQ(plan[0].soft, 0u);
  EXPECT_EQ(plan[0].hard, 0u);
}

TEST(PlanLimits, CpuHardLimitIsOneSecondLaterSoSigxcpuComesFirst) {
  const auto plan = PlanLimits(kDefaultRunLimits);
  EXPECT_EQ(plan.size(), 7u);
  bool saw_cpu = false;
  for (const auto& s : plan) {
    if (s.resource == RLIMIT_CPU) {
      saw_cpu = true;
      EXPECT_EQ(s.soft, 300u);
      EXPECT_EQ(s.hard, 301u);
    } else {
      EXPECT_EQ(s.soft, s.hard);
    }
  }
  EXPECT_TRUE(saw_cpu);
}

}  // namespace
}  // namespace skillmcp::worker

// ---- the parent-death step (worker/cell.h) -------------------------------------------

namespace skillmcp::worker {
namespace {

// Runs `f` in a forked child and returns its exit code (-1 if it did not exit).
template <typename F>
int InChildProcess(F f) {
  const pid_t pid = fork();
  if (pid == 0) _exit(f());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The race the check closes: a parent that is already gone never sends the signal, so
// a parent other than the expected one is refused (ESRCH) after the signal is armed.
TEST(DieWithParent, ArmsTheSignalAndRefusesAParentAlreadyGone) {
  EXPECT_EQ(InChildProcess([] {
              const pid_t parent = getppid();
              if (DieWithParent(SIGKILL, parent)) return 1;
              int sig = 0;
              if (prctl(PR_GET_PDEATHSIG, &sig) != 0 || sig != SIGKILL) return 2;
              StepResult gone = DieWithParent(SIGKILL, parent + 100000);
              if (!gone || gone->step != WorkerStep::kParentDeath || gone->err != ESRCH) return 3;
              return 0;
            }),
            0);
}

// The namespace's init watches its parent by pidfd: readable means it has exited.
TEST(DieWithParent, ByPidfdRefusesAParentThatHasExited) {
  EXPECT_EQ(InChildProcess([] {
              const int self = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
              if (self < 0 || DieWithParentPidfd(SIGKILL, self)) return 1;
              const pid_t gone = fork();
              if (gone == 0) _exit(0);
              const int fd = static_cast<int>(syscall(SYS_pidfd_open, gone, 0));
              if (fd < 0) return 2;
              siginfo_t info{};
              waitid(P_PID, static_cast<id_t>(gone), &info, WEXITED | WNOWAIT);
              StepResult r = DieWithParentPidfd(SIGKILL, fd);
              return r && r->step == WorkerStep::kParentDeath && r->err == ESRCH ? 0 : 3;
            }),
            0);
}

}  // namespace
}  // namespace skillmcp::worker
