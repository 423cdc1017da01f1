// When a live catalogue rescans (docs/configuration.md, "SKILL_MCP_WATCH"): after a quiet
// moment following the last change, or at the latest kRescanMaxWaitMs after the first one
// of a burst; one rescan at a time on a thread of its own, and at most one more queued
// behind it, however many changes come. The loop never waits for the disk.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

#include "broker/loop/event_loop.h"
#include "shared/unique_fd.h"

namespace skillmcp {

inline constexpr int64_t kRescanQuietMs = 300;
inline constexpr int64_t kRescanMaxWaitMs = 2000;

class Rescan {
 public:
  // Off the loop: does the work and returns what to do with its result on the loop.
  using Job = std::function<std::function<void()>()>;

  Rescan(EventLoop& loop, Job job);
  // Waits for a job still running (it reads the disk a bounded amount, never a client).
  ~Rescan();
  Rescan(const Rescan&) = delete;
  Rescan& operator=(const Rescan&) = delete;

  // False with errno set when the completion descriptor cannot be made or watched.
  bool Open();
  // Something changed: the job runs after the quiet moment (or is queued behind the one
  // running).
  void Changed();
  // Runs `once` on the thread now, unless a job is running (then the queued rescan will do
  // its part). For the first watch set after the boot scan.
  void RunNow(Job once);
  uint64_t completed() const { return completed_; }
  bool idle() const { return !running_ && timer_ == 0 && !queued_; }

 private:
  void Start(Job job);
  void OnDone();

  EventLoop& loop_;
  Job job_;
  UniqueFd done_fd_;  // eventfd: the thread's job has finished
  std::thread thread_;
  std::function<void()> apply_;  // written by the thread, read after join
  bool running_ = false;
  bool queued_ = false;
  EventLoop::TimerId timer_ = 0;
  int64_t first_change_ms_ = -1;  // the first change of the burst not yet scanned
  uint64_t completed_ = 0;
};

}  // namespace skillmcp
