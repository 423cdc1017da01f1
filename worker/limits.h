// Step kSetLimits: the run's resource limits, lowered only, and no core dumps ever.
#pragma once

#include <sys/resource.h>

#include <vector>

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

struct LimitSetting {
  int resource;  // RLIMIT_*
  rlim_t soft;
  rlim_t hard;
};

// Pure: the settings a RunLimits asks for (0 fields are left out), RLIMIT_CORE = 0 first.
std::vector<LimitSetting> PlanLimits(const RunLimits& limits);

// Applies the plan; each value is clamped to the current hard limit (without
// CAP_SYS_RESOURCE a raise would fail, and a raise is never what a limit is for).
StepResult ApplyLimits(const RunLimits& limits);

}  // namespace skillmcp::worker
