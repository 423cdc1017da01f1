// What every setup step returns: nothing on success, the failing step and errno otherwise.
#pragma once

#include <optional>

#include "shared/worker_protocol.h"

namespace skillmcp::worker {

struct StepError {
  WorkerStep step;
  int err;
};

using StepResult = std::optional<StepError>;

inline StepResult StepOk() { return std::nullopt; }
inline StepResult StepFailed(WorkerStep step, int err) { return StepError{step, err}; }

}  // namespace skillmcp::worker
