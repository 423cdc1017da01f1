// Step kReadSpec: the run description from fd 3, read to EOF and bounded.
#pragma once

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// Reads at most kRunSpecMaxBytes from `fd` until EOF and decodes it. More bytes than
// that, a read error or a spec DecodeRunSpec refuses all fail (EMSGSIZE / errno / EINVAL).
StepResult ReadRunSpec(int fd, RunSpec& out);

}  // namespace skillmcp::worker
