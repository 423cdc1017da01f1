// Step kReadSpec: the run description from fd 3, read to EOF and bounded.
#pragma once

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// Reads at most kRunSpecMaxBytes from `fd` until EOF and decodes it. More bytes than
// that, a read error or a spec DecodeRunSpec refuses all fail (EMSGSIZE / errno / EINVAL).
// When `fd` is a socket (a worker started ahead of its run), the description may carry
// the script and skill directory descriptors (SCM_RIGHTS, exactly two, once): they are
// placed at 6 and 7, which must then be empty (EEXIST); anything else is EBADMSG.
StepResult ReadRunSpec(int fd, RunSpec& out);

}  // namespace skillmcp::worker
