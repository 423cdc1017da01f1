// The seccomp compiler: the group table (seccomp/policy.h) turned into a classic BPF
// program with libseccomp. The broker compiles once (after serve's first answer, or at
// boot for doctor); workers only load the bytes (seccomp/load.h).
#pragma once

#include <string>

namespace skillmcp::seccomp {

// Builds the filter (fixed prefix + every group) with libseccomp into a classic BPF
// program for the native architecture: `struct sock_filter` records, 8 bytes each.
// The broker does this once at boot and hands the bytes to every worker (libseccomp's
// compilation costs ~0.8 ms, every run). Returns 0 or -errno; `bpf` is then unchanged.
// `without_view`: also NoViewPolicyGroups, for runs without their own view.
int CompileWorkerPolicy(std::string* bpf, bool without_view = false);

// CompileWorkerPolicy, then LoadCompiledPolicy (seccomp/load.h). Tests.
int InstallWorkerPolicy(bool without_view = false);

}  // namespace skillmcp::seccomp
