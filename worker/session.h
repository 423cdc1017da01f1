// Step kSetsid: a new session and process group, and a clean signal state.
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

// setsid(), then every signal's disposition to default and the signal mask emptied.
StepResult StartOwnSession();

}  // namespace skillmcp::worker
