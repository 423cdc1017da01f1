// The worker's pure helpers: argv building and the limit plan.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "shared/run_limits_default.h"
#include "worker/exec.h"
#include "worker/limits.h"
#include "worker/node_bootstrap.h"

namespace skillmcp::worker {
namespace {

TEST(BuildArgv, NodeScriptPutsPathAndArgsAfterTheOptionEnd) {
  RunSpec s;
  s.script_path = "/skills/a/--eval=process.exit(7)";
  s.args = {"--inspect", "-e", "x y"};
  const auto argv = BuildArgv(s);
  ASSERT_EQ(argv.size(), 8u);
  EXPECT_EQ(argv[1], "-e");
  EXPECT_EQ(argv[2], kNodeBootstrap);
  EXPECT_EQ(argv[3], "--");  // nothing after this is a node option
  EXPECT_EQ(argv[4], s.script_path);
  EXPECT_EQ(argv[5], "--inspect");
  EXPECT_EQ(argv[7], "x y");
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
