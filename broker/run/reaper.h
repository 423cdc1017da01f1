// The broker is the child subreaper of its runs. Whatever a script leaves behind when
// its parent dies (a double-forked daemon, a grandchild of a killed group) re-parents
// to the broker instead of to init, so the broker can kill and reap it. Between runs
// every child of the broker is such a leftover: Sweep() kills and reaps them all, and
// keeps sweeping on a backoff timer while any remain (a killed parent hands its own
// children over only as it dies).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "broker/loop/event_loop.h"

namespace skillmcp {

// Marks this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER). Not inherited
// across fork, so workers and scripts never have it. False with errno on failure.
bool BecomeSubreaper();

// The pids of this process's children, zombies included, from
// /proc/self/task/<tid>/children. Our unreaped children's pids cannot be reused, so the
// list stays true until we reap. Empty with errno set when /proc cannot be read.
std::vector<pid_t> ListChildren();

class Reaper {
 public:
  // `active_run` names the active run's leader (its pid is its process group id), -1
  // when no run is active; asked at every sweep, and that run is spared.
  Reaper(EventLoop& loop, std::function<pid_t()> active_run);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Another child to spare at every sweep (-1: none): the worker started ahead of the
  // next run (broker/run/worker_pool.h), which waits for its description, and the egress
  // helper the broker started (broker/run/egress_helper.h). Each call adds one.
  void SpareAlso(std::function<pid_t()> spared) { spared_.push_back(std::move(spared)); }

  // Kills (SIGKILL) and reaps every child except the active run's leader and the members
  // of its process group; never blocks. A pass that reaped something is followed by
  // another (a reaped process's children were handed to us as it died). If any are left
  // (still dying), sweeps again from the loop after a short, growing delay until none are.
  void Sweep();

  // Called from the loop when a delayed sweep has found nothing left.
  void WhenClear(std::function<void()> clear) { clear_ = std::move(clear); }

  // Shutdown (no run active any more): sweeps and waits until no child is left or `timeout_ms` has passed.
  // True when none is left.
  bool SweepAndWait(int64_t timeout_ms);

  // Children seen and not yet reaped after the last sweep (tests, logs).
  size_t left() const { return left_; }
  // Leftovers killed and reaped so far (tests, logs).
  uint64_t reaped() const { return reaped_; }

 private:
  size_t SweepOnce(pid_t spare);
  size_t SweepPasses(pid_t spare);
  void Arm();

  EventLoop& loop_;
  std::function<pid_t()> active_run_;
  std::vector<std::function<pid_t()>> spared_;
  std::function<void()> clear_;
  EventLoop::TimerId timer_ = 0;
  int64_t delay_ms_ = 0;
  size_t left_ = 0;
  uint64_t reaped_ = 0;
};

}  // namespace skillmcp
