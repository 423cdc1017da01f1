// Descriptor steps: check the layout the broker hands over (shared/worker_protocol.h), close
// everything else, and set which descriptors survive the exec.
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

// kCheckFds, at the start: 0..2 and 4 open, 5 a regular file (a probe: 0..2 and 4).
StepResult CheckStartFds(bool probe);

// kCheckFds, once the run description is read (a worker started ahead receives 6 and 7
// with it): 6 a regular file, 7 a directory.
StepResult CheckRunFds();

// kCloseFds, at the start: closes every descriptor above 7 (3, the spec, stays until the
// description is read); marks 4 and 5 close-on-exec and clears it on 0..2.
StepResult CloseInheritedFds();

// kCloseFds, once the description is read: closes 3; clears close-on-exec on 6 (with 0..2
// the only ones node may inherit) and sets it on 7.
StepResult CloseSpecFd();

}  // namespace skillmcp::worker
