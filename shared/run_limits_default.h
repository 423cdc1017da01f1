// The resource limits a broker gives a run unless configured otherwise (RunLimits in
// shared/worker_protocol.h). Measured on Debian 12, node v20, x86_64, with an "ordinary"
// script (fs, child_process.spawnSync('node'), worker_threads, crypto, http on
// loopback) and WebAssembly; the worker tests run node under exactly these values.
#pragma once

#include "shared/worker_protocol.h"

namespace skillmcp {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

inline constexpr RunLimits kDefaultRunLimits{
    // Fork bombs. Counts processes AND threads of the run-as uid: an ordinary node
    // run has 7 threads, a spawned child node 7 more, each worker thread about 2.
    .nproc = 256,
    // Address space: a backstop only. V8 reserves large ranges it never touches: node
    // starts at a 1.6 GiB peak, and one WebAssembly.Memory reserves about 10 GiB of
    // guard space (measured VmPeak 11.3 GiB; wasm fails at 8 GiB and works at 16 GiB).
    // A smaller AS breaks node; DATA below is the real memory bound.
    .address_space = 16 * kGiB,
    // Memory bombs: private writable memory (heap, Buffers, touched V8 pages; not the
    // PROT_NONE reservations). An ordinary run has 56 MiB; 640 MiB of Buffers plus a
    // 285 MiB JS heap still run at 1 GiB. Shared anonymous mappings are not counted:
    // AS bounds those (a memory cgroup would be the full answer).
    .data = 1 * kGiB,
    // CPU seconds across all threads: a backstop to the broker's wall-clock timeout
    // (hard ceiling 300 s). SIGXCPU at the limit, SIGKILL a second later.
    .cpu_seconds = 300,
    // Disk filling: no single file past 256 MiB (the write gets SIGXFSZ / EFBIG).
    .fsize = 256 * kMiB,
    // Descriptor exhaustion: an ordinary run holds about 25.
    .nofile = 1024,
};

}  // namespace skillmcp
