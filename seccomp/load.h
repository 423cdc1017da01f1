// Loading a compiled filter: what the worker does with the program the broker compiled
// at boot (seccomp/policy.h). Depends on no library, so the worker links no libseccomp.
#pragma once

#include <cstddef>
#include <string_view>

namespace skillmcp::seccomp {

inline constexpr size_t kBpfInsnBytes = 8;     // sizeof(struct sock_filter)
inline constexpr size_t kBpfMaxInsns = 4096;   // BPF_MAXINSNS: the kernel's own ceiling

// True when `bpf` could be a program: 1..kBpfMaxInsns whole instructions.
bool IsPlausibleBpf(std::string_view bpf);

// Loads `bpf` into the calling thread with seccomp(SECCOMP_SET_MODE_FILTER, 0). The
// caller must already have no_new_privs (the worker's step kNoNewPrivs). The kernel
// verifies the program. Returns 0 or -errno (EINVAL for a size IsPlausibleBpf refuses);
// on failure nothing is loaded.
int LoadCompiledPolicy(std::string_view bpf);

}  // namespace skillmcp::seccomp
