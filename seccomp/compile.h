// The seccomp compiler: the group table (seccomp/policy.h) turned into a classic BPF
// program with libseccomp. The broker compiles once (after serve's first answer, or at
// boot for doctor); workers only load the bytes (seccomp/load.h).
#pragma once

#include <string>

#include "seccomp/policy.h"

namespace skillmcp::seccomp {

// Builds the filter (fixed prefix + every group) with libseccomp into a classic BPF
// program for the native architecture: `struct sock_filter` records, 8 bytes each.
// The broker does this once at boot and hands the bytes to every worker (libseccomp's
// compilation costs ~0.8 ms, every run). Returns 0 or -errno; `bpf` is then unchanged.
// `fence`: also UnixSocketGroups or NoViewPolicyGroups (seccomp/policy.h);
// `inet_fence`: also InetSocketGroups, for a run kept off the network.
int CompileWorkerPolicy(std::string* bpf, DoorFence fence = DoorFence::kNone,
                        bool inet_fence = false);

// The run's mirror's filter (MirrorPolicyGroups, seccomp/policy.h) behind the same fixed
// prefix; compiled once by the broker like the run's, loaded by the mirror.
int CompileMirrorPolicy(std::string* bpf);

// CompileWorkerPolicy, then LoadCompiledPolicy (seccomp/load.h). Tests.
int InstallWorkerPolicy(DoorFence fence = DoorFence::kNone, bool inet_fence = false);

}  // namespace skillmcp::seccomp
