// Descriptor steps: check the layout the broker hands over (shared/worker_protocol.h), close
// everything else, and set which descriptors survive the exec.
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

// kCheckFds: 0..2 and 4 open, 5 and 6 regular files, 7 a directory.
StepResult CheckInheritedFds(bool probe);

// kCloseFds: closes 3 (the spec, fully read) and every descriptor above 7; marks 4 and 5
// close-on-exec and clears it on 0..2 and 6 (the only ones node may inherit).
StepResult CloseInheritedFds();

}  // namespace skillmcp::worker
