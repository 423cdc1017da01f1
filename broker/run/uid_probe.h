// Whether any process of a uid exists, host-wide, without reading /proc (a hardened unit
// hides other uids' entries: ProtectProc=invisible) and without kill(-1) (which reports
// success whenever any process exists at all). The kernel counts the processes of each
// real uid for RLIMIT_NPROC, across pid and user namespaces: a probe child switches to the
// uid with RLIMIT_NPROC = 2 and no capability, and tries to fork once. The fork succeeds
// only when the probe itself is the uid's one process (docs/isolation.md).
#pragma once

#include <cstdint>

namespace skillmcp {

enum class UidProcesses { kNone, kSome, kUnknown };

// Forks the probe and waits for it (it makes three system calls and one fork: it cannot
// hang). Needs CAP_SETUID. Any failure is kUnknown, which callers treat as kSome.
UidProcesses ProbeUidProcesses(uint32_t uid);

}  // namespace skillmcp
