// The whole-run memory bound on the event loop: while a run has not ended its memory in
// all is sampled (broker/run/run_memory.h) every kRunMemorySampleMs, or 10 x a sample's
// cost when that is longer; past the limit, or with more processes than a sample can
// read, the run is killed at once. Never a blocking wait.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "broker/loop/event_loop.h"
#include "broker/run/launch_config.h"
#include "broker/run/run_result.h"

namespace skillmcp {

struct RunMemorySample;  // broker/run/run_memory.h

// The processes a sample starts from: the run's worker, then the broker's children in
// its process group (its orphans, re-parented to the broker), never `spare` (the worker
// waiting for the next run).
std::vector<pid_t> RunProcessRoots(pid_t worker, pid_t spare);

class RunMemoryWatch {
 public:
  // The run's roots (RunProcessRoots), or none once the run has ended: sampling stops.
  using Roots = std::function<std::vector<pid_t>()>;
  // Called once, from the loop, when a sample finds the run over its bound: kill it.
  using Kill = std::function<void(const MemoryKill&)>;

  // `loop` and `config` must outlive the watch.
  RunMemoryWatch(EventLoop& loop, const LaunchConfig& config, Roots roots, Kill kill);
  ~RunMemoryWatch() { Stop(); }
  RunMemoryWatch(const RunMemoryWatch&) = delete;
  RunMemoryWatch& operator=(const RunMemoryWatch&) = delete;

  // Starts sampling the run of `worker` (its pid names it in the log), where a limit is set.
  void Start(pid_t worker);
  // No sample after this: the run has ended, or is dropped.
  void Stop();
  // The largest sample of the run last started, in bytes; nullopt when none was taken (no
  // limit is set, or the run ended before the first sample).
  std::optional<uint64_t> peak() const { return peak_; }

 private:
  void Sample();
  void KillForMemory(const RunMemorySample& sample);

  EventLoop& loop_;
  const LaunchConfig& config_;
  Roots roots_;
  Kill kill_;
  EventLoop::TimerId timer_ = 0;
  pid_t worker_ = -1;
  bool blind_warned_ = false;  // the run's root was unreadable in /proc once
  std::optional<uint64_t> peak_;
};

}  // namespace skillmcp
