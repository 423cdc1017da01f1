// Whether any process of a uid exists, host-wide, without reading /proc (a hardened unit
// hides other uids' entries: ProtectProc=invisible) and without kill(-1) (which reports
// success whenever any process exists at all). The kernel counts the processes of each
// real uid for RLIMIT_NPROC, per user namespace, adding a namespace's count to the uid
// that created it: a probe child takes the uid as its real uid (its effective and saved
// uids stay the caller's) with RLIMIT_NPROC = 2 and no capability, and tries to fork
// once. The fork succeeds only when the probe itself is the uid's one process in the host
// user namespace and in the namespaces the uid created; processes of the uid in a
// namespace another uid created are not seen, which is why the range is checked at boot
// (docs/isolation.md, "Own identity per run").
#pragma once

#include <cstdint>

namespace skillmcp {

enum class UidProcesses { kNone, kSome, kUnknown };

// How long the broker waits for a probe. Once switched, the probe can be stopped
// (SIGSTOP) by any process of the uid; past this it is killed and the uid counts as taken.
inline constexpr int kProbeWaitMs = 100;

// Starts the probe (beside the caller, in its memory: shared/borrowed_clone.h) and waits
// for it at most kProbeWaitMs; a probe that has not ended by then is killed with its child
// and reaped. Needs CAP_SETUID and CAP_KILL. Any failure or timeout is kUnknown, which
// callers treat as kSome (fail closed).
UidProcesses ProbeUidProcesses(uint32_t uid);

}  // namespace skillmcp
