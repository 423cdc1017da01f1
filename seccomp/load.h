// Loading a compiled filter: what the worker does with the program the broker compiled
// at boot (seccomp/policy.h). Depends on no library, so the worker links no libseccomp.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "shared/worker_protocol.h"

namespace skillmcp::seccomp {

// The program's size limits and IsPlausibleBpf are in shared/worker_protocol.h, where the
// run spec's decoder checks them too.

// Loads `bpf` into the calling thread with seccomp(SECCOMP_SET_MODE_FILTER, 0). The
// caller must already have no_new_privs (the worker's step kNoNewPrivs). The kernel
// verifies the program. Returns 0 or -errno (EINVAL for a size IsPlausibleBpf refuses);
// on failure nothing is loaded.
int LoadCompiledPolicy(std::string_view bpf);

// The same in two halves, so that the load allocates nothing: the worker prepares the
// program in the process that then clones node's, whose last steps run in memory it
// shares with its parent (worker/launch.h). PreparePolicy copies `bpf` into aligned
// instructions (0, or -EINVAL as above); LoadPreparedPolicy loads them (0 or -errno).
struct PreparedPolicy {
  std::vector<sock_filter> insns;
};
int PreparePolicy(std::string_view bpf, PreparedPolicy& out);
int LoadPreparedPolicy(const PreparedPolicy& policy);

}  // namespace skillmcp::seccomp
