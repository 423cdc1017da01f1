// Reporting a failed setup step to the broker: one framed WorkerReport on fd 4
// (shared/worker_protocol.h), then _exit with the step's code. Nothing after a failed step runs (all-fatal sequence).
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

[[noreturn]] void FailAndExit(const StepError& error);

}  // namespace skillmcp::worker
