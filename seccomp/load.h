// Loading a compiled filter: what the worker does with the program the broker compiled
// at boot (seccomp/policy.h). Depends on no library, so the worker links no libseccomp.
#pragma once

#include <cstddef>
#include <string_view>

#include "shared/worker_protocol.h"

namespace skillmcp::seccomp {

// The program's size limits and IsPlausibleBpf are in shared/worker_protocol.h, where the
// run spec's decoder checks them too.

// Loads `bpf` into the calling thread with seccomp(SECCOMP_SET_MODE_FILTER, 0). The
// caller must already have no_new_privs (the worker's step kNoNewPrivs). The kernel
// verifies the program. Returns 0 or -errno (EINVAL for a size IsPlausibleBpf refuses);
// on failure nothing is loaded.
int LoadCompiledPolicy(std::string_view bpf);

}  // namespace skillmcp::seccomp
