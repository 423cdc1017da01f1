// Runs that have been answered while their worker, or something they left, is still
// dying: each keeps its run's uid (broker/run/run_uids.h) until the reaper finds nothing
// left, so no later run shares a uid with a process still alive, and the next worker is
// started ahead only then.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "broker/loop/event_loop.h"
#include "broker/run/reaper.h"
#include "broker/run/run_uids.h"
#include "shared/unique_fd.h"

namespace skillmcp {

// How long a run's leftovers get to die: at shutdown before the broker gives up on them,
// and after a run's answer before saying that its uid stays taken.
inline constexpr int64_t kShutdownReapMs = 3000;

class FinishingWorkers {
 public:
  // `loop` and `reaper` must outlive this; `cleared` is called from the loop once the
  // last of them is reaped (the uids have gone back).
  FinishingWorkers(EventLoop& loop, Reaper& reaper, std::function<void()> cleared);
  FinishingWorkers(const FinishingWorkers&) = delete;
  FinishingWorkers& operator=(const FinishingWorkers&) = delete;

  // Holds the run of worker `pid` (its pidfd and uid lease) until nothing of it is left;
  // `watch_worker`: the worker itself is not reaped yet, so its exit is watched too.
  void Add(pid_t pid, UniqueFd pidfd, std::optional<RunUidLease> uid_lease, bool watch_worker);
  // The reaper found nothing left (Reaper::WhenClear): sweeps once more, then lets every
  // one go.
  void ReaperClear();
  // Shutdown: stops watching and hands back their leases, for the caller to release once
  // it has reaped their workers (they are the broker's children).
  std::vector<std::optional<RunUidLease>> Drop();

  bool empty() const { return workers_.empty(); }
  size_t size() const { return workers_.size(); }

 private:
  struct Worker {
    pid_t pid = -1;
    UniqueFd pidfd;
    std::optional<RunUidLease> uid_lease;
    EventLoop::TimerId warn_timer = 0;  // says so once if it does not exit
  };
  void OnExit(int pidfd);

  EventLoop& loop_;
  Reaper& reaper_;
  std::function<void()> cleared_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace skillmcp
