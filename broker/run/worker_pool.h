// One worker started ahead of the run that will use it, so the spawn and exec of the
// worker and the run-independent part of its sequence are off a run's critical path
// (docs/performance.md). It is started with run-independent descriptors only (0..5:
// /dev/null, its pipes, the spec socket, a pinned interpreter) and told its cell at once
// (shared/worker_protocol.h, CellSpec), takes the steps of its sequence that no run
// decides (worker/main.cc) and blocks reading its description. Why only those: the
// script and skill directory descriptors (sent by SCM_RIGHTS), the arguments, variables,
// limits and the run's own directories are the run's, and reach it with the description.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "broker/run/launch_config.h"
#include "broker/run/run_uids.h"
#include "broker/run/scratch_dir.h"
#include "broker/run/spawn.h"

namespace skillmcp {

// A worker told its cell, with the lease of the uid it switched to when that uid is its
// own (none: the run-as uid, or a uid its run takes, CellSpec::ids_ahead false), and then
// its run's scratch directory, made ahead for that uid (null: the run makes it).
// Declared after the lease, the directory is removed before the uid goes back.
struct PooledWorker {
  Spawned spawned;
  const PinnedInterpreter* interpreter = nullptr;  // its fd 5 (one of the configuration's)
  std::optional<RunUidLease> uid_lease;
  std::unique_ptr<ScratchDir> scratch;
};

struct TakeOutcome {
  std::optional<PooledWorker> worker;
  std::string no_uid;  // when !worker: why no uid was free (runs are unavailable) ...
  SpawnError error;    // ... or else the call that failed
};

class WorkerPool {
 public:
  explicit WorkerPool(const LaunchConfig& config) : config_(config) {}
  ~WorkerPool();  // kills and reaps the waiting worker
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // A worker for a run of `interpreter`, told its cell: the waiting one while it is alive
  // and holds that interpreter, else one started now. The caller sends the description, which must
  // ask for the same cell, with the script and skill directory descriptors (SendRunDescription) and
  // owns the worker from then on.
  TakeOutcome Take(const PinnedInterpreter& interpreter);
  // Starts the next waiting worker, for the interpreter of the last run taken (the first
  // of the set before any), unless one waits already or runs are off.
  void Refill();
  // The waiting worker's pid, or -1 (the reaper spares it; tests).
  pid_t waiting_pid() const { return idle_ ? idle_->spawned.pid : -1; }
  // Kills and reaps the waiting worker, if any (shutdown).
  void Discard();

 private:
  TakeOutcome Start(const PinnedInterpreter& interpreter) const;

  const LaunchConfig& config_;
  const PinnedInterpreter* next_ = nullptr;  // the interpreter Refill starts a worker for
  std::optional<PooledWorker> idle_;
};

// Sends the first bytes of a description on a started-ahead worker's spec socket with
// `script_fd` and `skill_dir_fd` attached, and `egress_fd` (the run's end of its egress
// channel) when it is not -1; returns the bytes sent or -1 with errno (EAGAIN on a full
// non-blocking socket: nothing was sent, call again).
ssize_t SendRunDescription(int spec_fd, const std::string& bytes, int script_fd, int skill_dir_fd,
                           int egress_fd = -1);

}  // namespace skillmcp
