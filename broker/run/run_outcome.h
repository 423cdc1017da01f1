// What a run's worker said on fd 4 and how it ended, decoded into the plain RunResult
// skill_run renders (broker/run/run_result.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "broker/run/launch_config.h"
#include "broker/run/run_result.h"

namespace skillmcp {

// The report first, the exit second: a setup failure when fd 4 carried a report or
// anything unreadable (`report`: its bytes), else the exit code or signal of
// `child_code`/`child_status` (waitid's CLD_* and value, or the reported end's; code 0:
// neither is known). Only failure, exit_code and signal are set; a failure names the
// run's `interpreter` and its pinned path.
RunResult DecodeRunOutcome(const std::string& report, int child_code, int child_status,
                           uint32_t uid, const LaunchConfig& config, std::string_view interpreter);

}  // namespace skillmcp
