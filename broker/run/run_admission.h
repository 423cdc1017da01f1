// Admitting a run: the worker it takes (started ahead, or now), the uid it runs under and
// its own scratch directory, all in place before the worker is told what to run. A run
// that cannot have all three runs nothing: its worker is killed unfed.
#pragma once

#include <cstdint>
#include <optional>

#include "broker/run/launch_config.h"
#include "broker/run/reaper.h"
#include "broker/run/run_result.h"
#include "broker/run/worker_pool.h"

namespace skillmcp {

// The admitted worker (its lease, when the uid is its run's own, and its scratch
// directory, made for `uid`), or why the run is refused.
struct Admission {
  std::optional<PooledWorker> worker;
  uint32_t uid = 0;
  StartRefusal refusal;  // when !worker
};

Admission AdmitWorker(WorkerPool& pool, const LaunchConfig& config, Reaper& reaper,
                      const PinnedInterpreter& interpreter);

// Kills a worker that has not been told what to run and has the reaper collect it;
// returns `why`. The caller drops the worker's scratch directory and then its lease.
StartRefusal RefuseUnfed(const Spawned& worker, Reaper& reaper, StartRefusal why);

StartRefusal SystemRefusal(std::string what, int err);

}  // namespace skillmcp
