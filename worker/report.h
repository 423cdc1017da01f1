// Reporting a failed setup step to the broker: one framed WorkerReport on fd 4
// (shared/worker_protocol.h), then _exit with the step's code. Nothing after a failed step runs (all-fatal sequence).
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

[[noreturn]] void FailAndExit(const StepError& error);

// The run's end on fd 4: node's wait status as one framed WorkerExit
// (shared/worker_protocol.h), written by whichever process reaped node once nothing else
// of the run's is left to wait for. Best effort: without it the broker waits for the
// worker's own exit, which mirrors the same status.
void ReportRunEnd(int wait_status);

}  // namespace skillmcp::worker
