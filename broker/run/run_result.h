// What the run side hands back to skill_run: plain values, no wire format. broker/tools
// renders them (the receipt and every user-facing message, tools/run_receipt.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "broker/run/egress_summary.h"

namespace skillmcp {

inline constexpr size_t kStreamCaptureBytes = 1048576;  // per stream, docs/wire.md

// One output stream: the first kStreamCaptureBytes bytes are kept, the rest counted and
// dropped (the reader keeps draining, so the script never blocks on a full pipe).
struct StreamCapture {
  std::string data;
  bool truncated = false;
  uint64_t total = 0;
  void Append(const char* bytes, size_t n);
};

// Why a run could not start at all (nothing was spawned, on_done is not called).
enum class StartProblem {
  kBusy,            // a run is in flight
  kUnavailable,     // runs are refused on this server: `detail` says why
  kBadDescription,  // an argument or variable holds a NUL, or the whole is over 1 MiB
  kSystem,          // pipes, descriptors, clone or pidfd_open failed: `detail` names the call
};

struct StartRefusal {
  StartProblem problem = StartProblem::kSystem;
  std::string detail;
  int err = 0;  // errno for kSystem
};

// A setup step failed: nothing of the script ran. `step` is a WorkerStep value
// (shared/worker_protocol.h), `err` its errno, or kUnreadableReport when fd 4 carried
// something that is not a report; the rest is context for the message.
inline constexpr int32_t kUnreadableReport = 0;

struct SetupFailure {
  int32_t step = 0;
  int32_t err = 0;
  uint32_t uid = 0, gid = 0;
  std::string worker_path;
  std::string interpreter, interpreter_path;  // the run's, as pinned
};

// The whole-run memory bound killed the run (broker/run/run_memory.h): its limit, and what
// the sample that passed it counted.
struct MemoryKill {
  uint64_t limit_bytes = 0;
  uint64_t used_bytes = 0;
  size_t processes = 0;
  size_t sample_cap = 0;  // not 0: the sample reached this many /proc reads and stopped
};

struct RunResult {
  std::optional<SetupFailure> failure;  // set: the script did not start
  std::optional<int> exit_code;         // the script exited with this code
  std::optional<int> signal;            // or was killed by this signal
  StreamCapture out, err;
  bool timed_out = false;
  std::optional<MemoryKill> memory_kill;  // set: killed for its memory in all
  int64_t duration_ms = 0;
  uint32_t run_uid = 0;  // the uid the run had
  // The largest whole-run memory sample (broker/run/run_memory_watch.h); nullopt: none taken.
  std::optional<uint64_t> peak_memory_bytes;
  // The declared network mode: which hosts the run reached and what it was refused.
  std::optional<EgressSummary> egress;
};

}  // namespace skillmcp
