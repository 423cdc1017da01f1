// One worker started ahead of the run that will use it, so the spawn and exec of the
// worker are off a run's critical path (README.md "Performance"). It is started with
// run-independent descriptors only (0..5: /dev/null, its pipes, the spec socket, the
// pinned node) and blocks reading its description, before its first step: everything
// the run decides (the identity, limits, view, the script and skill directory
// descriptors, sent with the description by SCM_RIGHTS) reaches it at the run, and its
// ordered, all-fatal sequence starts only then (worker/main.cc).
#pragma once

#include <sys/types.h>

#include <optional>

#include "broker/run/launch_config.h"
#include "broker/run/spawn.h"

namespace skillmcp {

class WorkerPool {
 public:
  explicit WorkerPool(const LaunchConfig& config) : config_(config) {}
  ~WorkerPool();  // kills and reaps the waiting worker
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // A worker for a run: the waiting one while it is alive, else one started now. The
  // caller sends the description with the script and skill directory descriptors
  // (SendRunDescription) and owns the worker from then on.
  SpawnOutcome Take();
  // Starts the next waiting worker, unless one waits already or runs are off.
  void Refill();
  // The waiting worker's pid, or -1 (the reaper spares it; tests).
  pid_t waiting_pid() const { return idle_ ? idle_->pid : -1; }
  // Kills and reaps the waiting worker, if any (shutdown).
  void Discard();

 private:
  SpawnOutcome Start() const;

  const LaunchConfig& config_;
  std::optional<Spawned> idle_;
};

// Sends the first bytes of a description on a started-ahead worker's spec socket with
// `script_fd` and `skill_dir_fd` attached; returns the bytes sent or -1 with errno (EAGAIN
// on a full non-blocking socket: nothing was sent, call again).
ssize_t SendRunDescription(int spec_fd, const std::string& bytes, int script_fd, int skill_dir_fd);

}  // namespace skillmcp
