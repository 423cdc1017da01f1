#include "worker/caps.h"

#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include <cerrno>

namespace skillmcp::worker {
namespace {

bool HaveEffective(cap_value_t cap) {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return false;
  cap_flag_value_t v = CAP_CLEAR;
  const bool ok = cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0;
  cap_free(caps);
  return ok && v == CAP_SET;
}

// Iterates the capability numbers this kernel knows (PR_CAPBSET_READ says EINVAL past
// the last one), so a newer kernel's capabilities are covered without a rebuild.
template <typename F>
int ForEachKernelCap(F f) {
  for (int cap = 0; cap < 64; ++cap) {
    const int in_bounding = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in_bounding < 0) {
      if (errno == EINVAL) return 0;
      return -errno;
    }
    if (int rc = f(cap, in_bounding == 1); rc != 0) return rc;
  }
  return 0;
}

}  // namespace

StepResult LockSecurebits(bool missing_cap_is_fatal) {
  // Needs CAP_SETPCAP. Without it (a non-root broker, or root with its capabilities
  // dropped by the container) the bits stay off, deliberately not fatal: NOROOT only
  // matters for a process that is or becomes uid 0 and execs; a non-root worker cannot
  // become root (no_new_privs stops setuid binaries), and a root worker is covered by
  // DropBoundingSet, which refuses to go on unless root's bounding set is empty.
  // why fatal inside the run's user namespace: the worker holds every capability over
  // it there, so a missing CAP_SETPCAP means something is wrong: fail closed.
  if (!HaveEffective(CAP_SETPCAP)) {
    return missing_cap_is_fatal ? StepFailed(WorkerStep::kSecurebits, EPERM) : StepOk();
  }
  const unsigned long bits =
      SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |                    // uid 0 gets no caps at exec
      SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |  // uid changes never re-grant
      SECBIT_KEEP_CAPS_LOCKED |                                 // keep-caps stays off
      SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;  // no ambient ever again
  if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0)
    return StepFailed(WorkerStep::kSecurebits, errno);
  return StepOk();
}

StepResult DropBoundingSet(bool eperm_is_fatal) {
  const int rc = ForEachKernelCap([eperm_is_fatal](int cap, bool present) -> int {
    if (!present) return 0;  // already gone: nothing to drop
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) return 0;
    // EPERM means no CAP_SETPCAP. For a worker that will not be root at exec that is
    // tolerable: the bounding set only limits what an exec can grant (setuid-root or
    // file capabilities), and no_new_privs, set before exec, makes exec grant nothing.
    // For a root worker exec would hand the bounding set back: fatal.
    if (errno == EPERM && !eperm_is_fatal) return 0;
    return -errno;
  });
  if (rc != 0) return StepFailed(WorkerStep::kDropBounding, -rc);
  return StepOk();
}

StepResult ClearCapabilities() {
  // Ambient capabilities survive a non-root to non-root uid change and every exec:
  // clear them explicitly.
  // One prctl, not libcap's cap_reset_ambient, which first probes the capabilities one
  // by one (about 40 calls) on every run's path. Any failure is fatal: every kernel the
  // worker runs on (pidfds: 5.3 or later) has ambient capabilities.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    return StepFailed(WorkerStep::kDropAmbient, errno);
  cap_t empty = cap_init();  // all three sets cleared
  if (empty == nullptr) return StepFailed(WorkerStep::kDropCaps, errno);
  const int rc = cap_set_proc(empty);
  const int err = errno;
  cap_free(empty);
  if (rc != 0) return StepFailed(WorkerStep::kDropCaps, err);
  return StepOk();
}

EffectiveCapsOff::~EffectiveCapsOff() { cap_free(saved_); }

StepResult EffectiveCapsOff::Suspend(WorkerStep step) {
  cap_t now = cap_get_proc();
  if (now == nullptr) return StepFailed(step, errno);
  cap_t off = cap_dup(now);
  if (off == nullptr || cap_clear_flag(off, CAP_EFFECTIVE) != 0 || cap_set_proc(off) != 0) {
    const int err = errno;
    cap_free(off);
    cap_free(now);
    return StepFailed(step, err);
  }
  cap_free(off);
  cap_free(saved_);
  saved_ = now;
  return StepOk();
}

StepResult EffectiveCapsOff::Restore(WorkerStep step) {
  if (saved_ == nullptr) return StepFailed(step, EINVAL);
  if (cap_set_proc(static_cast<cap_t>(saved_)) != 0) return StepFailed(step, errno);
  return StepOk();
}

StepResult VerifyCapabilities(bool will_be_root) {
  cap_t now = cap_get_proc();
  cap_t empty = cap_init();
  if (now == nullptr || empty == nullptr) {
    const int err = errno;
    cap_free(now);
    cap_free(empty);
    return StepFailed(WorkerStep::kVerifyCaps, err);
  }
  const int diff = cap_compare(now, empty);
  cap_free(now);
  cap_free(empty);
  if (diff != 0) return StepFailed(WorkerStep::kVerifyCaps, EPERM);
  // The ambient set is verified by the line above: "no capability can ever be ambient if
  // it is not both permitted and inheritable" (capabilities(7); a capset that drops one
  // from either clears it from ambient, a raise needs it in both), so both empty means
  // ambient empty. Not probed one capability at a time: that was some 40 prctls on every
  // run's path, in the init before node.
  if (!will_be_root) return StepOk();
  // why: exec as root hands the bounding set back as permitted capabilities.
  const int rc =
      ForEachKernelCap([](int, bool in_bounding) -> int { return in_bounding ? -EPERM : 0; });
  if (rc != 0) return StepFailed(WorkerStep::kVerifyCaps, -rc);
  return StepOk();
}

}  // namespace skillmcp::worker
