// doctor's run-memory line (broker/harden/layers.cc, broker/run/run_memory.h): on with the
// sampling period, the limit and what bounds a burst; off with the reason; demanded (an
// explicit SKILL_MCP_LIMIT_RUN_MEMORY_MB) and off fails doctor.
#include <gtest/gtest.h>

#include <string>

#include "broker/harden/layers.h"
#include "tests/unit/harden/child.h"
#include "tests/unit/harden/find_layer.h"

namespace skillmcp {
namespace {

using testing::Find;
using testing::InChild;

IsolationFacts Facts() {
  IsolationFacts f;
  f.process = HardenProcess();  // in the child: doctor's other layers are then on
  f.scrub_attempted = true;
  f.scrub.ok = true;
  f.privileges.caps_reduced = true;
  f.worker.runs_possible = true;
  return f;
}

TEST(RunMemoryLayer, OnSaysThePeriodTheLimitAndTheBurstBound) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = Facts();
              f.worker.run_memory_mb = 256;
              f.worker.run_memory_demanded = true;
              f.worker.run_memory_sample_ms = 50;
              f.worker.run_memory_burst = "nproc x data (256 x 1024 MiB)";
              auto layers = ComputeLayers(f);
              const Layer* l = Find(layers, "run-memory");
              if (!l || !l->on || DoctorExitCode(layers) != 0) return 1;
              const std::string want =
                  "sampled every 50 ms (or 10 x a sample's cost when longer), limit 256 MiB "
                  "per run; a burst faster than the sampling is bounded by nproc x data "
                  "(256 x 1024 MiB)";
              return l->reason.rfind(want, 0) == 0 ? 0 : 2;
            }),
            0);
}

TEST(RunMemoryLayer, OffGivesTheReasonAndFailsDoctorOnlyWhenDemanded) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = Facts();
              f.worker.run_memory_off_reason = "/proc is mounted with hidepid=invisible";
              auto layers = ComputeLayers(f);
              const Layer* l = Find(layers, "run-memory");
              if (!l || l->on || l->reason != f.worker.run_memory_off_reason) return 1;
              if (l->enable.empty()) return 2;
              if (DoctorExitCode(layers) != 0) return 3;  // the default bound: off is no failure
              f.worker.run_memory_demanded = true;
              return DoctorExitCode(ComputeLayers(f)) == 1 ? 0 : 4;
            }),
            0);
}

}  // namespace
}  // namespace skillmcp
