// Capability steps (libcap + prctl): securebits, bounding set, ambient, the three sets.
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

// kSecurebits: with CAP_SETPCAP, set and lock NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off)
// and NO_CAP_AMBIENT_RAISE. Without CAP_SETPCAP it is skipped (see caps.cc: the
// bounding step then makes sure a root worker has nothing to regain).
StepResult LockSecurebits();

// kDropBounding: drop every capability present in the bounding set. `will_be_root`
// says whether any uid will still be 0 at exec.
StepResult DropBoundingSet(bool will_be_root);

// kDropAmbient then kDropCaps: ambient cleared; effective, permitted, inheritable empty.
StepResult ClearCapabilities();

// kVerifyCaps: re-reads every set: effective, permitted, inheritable and ambient empty;
// the bounding set empty too when the worker will be root (the case where exec would
// otherwise hand the bounding set back).
StepResult VerifyCapabilities(bool will_be_root);

}  // namespace skillmcp::worker
