// Capability steps (libcap + prctl): securebits, bounding set, ambient, the three sets.
#pragma once

#include "worker/step_result.h"

namespace skillmcp::worker {

// kSecurebits: with CAP_SETPCAP, set and lock NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off)
// and NO_CAP_AMBIENT_RAISE. Without CAP_SETPCAP it is skipped unless
// `missing_cap_is_fatal` (see caps.cc: the bounding step then makes sure a root worker
// has nothing to regain). A new user namespace starts with the default (unlocked)
// securebits, so the view's first half locks them again inside it, where CAP_SETPCAP is
// held (true).
StepResult LockSecurebits(bool missing_cap_is_fatal = false);

// kDropBounding: drop every capability present in the bounding set. With
// `eperm_is_fatal` false, EPERM (no CAP_SETPCAP) is tolerated: right for a worker that
// will not be root at exec (the cell's drop passes whether a uid stays 0; the view's first
// half, inside the run's user namespace where CAP_SETPCAP is held, passes true).
StepResult DropBoundingSet(bool eperm_is_fatal);

// kDropAmbient then kDropCaps: ambient cleared; effective, permitted, inheritable empty.
StepResult ClearCapabilities();

// The effective set emptied while a worker started ahead looks up paths for the run
// (permitted kept, so Restore gives it back): a lookup then sees the files as the run's
// user alone, as the same lookup at the run does, after ClearCapabilities. `step` is the
// step a failure reports.
class EffectiveCapsOff {
 public:
  EffectiveCapsOff() = default;
  EffectiveCapsOff(const EffectiveCapsOff&) = delete;
  EffectiveCapsOff& operator=(const EffectiveCapsOff&) = delete;
  ~EffectiveCapsOff();
  StepResult Suspend(WorkerStep step);
  StepResult Restore(WorkerStep step);

 private:
  void* saved_ = nullptr;  // libcap's cap_t of the sets before Suspend
};

// kVerifyCaps: re-reads the sets: effective, permitted and inheritable empty, which
// leaves the ambient set empty too (the kernel keeps it within permitted and
// inheritable); the bounding set empty too when the worker will be root (the case where
// exec would otherwise hand the bounding set back).
StepResult VerifyCapabilities(bool will_be_root);

}  // namespace skillmcp::worker
