// The broker's single-threaded event loop: epoll over descriptors (stdin, worker pipes,
// pidfds, signalfd) plus monotonic timers. Nothing in the broker blocks: a running script
// or a pending confirmation prompt never stops it answering.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>

#include "shared/unique_fd.h"

namespace skillmcp {

class EventLoop {
 public:
  using FdCallback = std::function<void(uint32_t events)>;  // EPOLLIN | EPOLLHUP | ...
  using TimerCallback = std::function<void()>;
  using TimerId = uint64_t;

  EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  bool ok() const { return epoll_.valid(); }

  // Watches `fd` (level-triggered). Returns false and sets errno on failure.
  // A callback may add or remove any watch, including its own.
  bool AddFd(int fd, uint32_t events, FdCallback callback);
  // Changes the events of a watched `fd` (0 keeps the watch but wakes for nothing).
  bool ModifyFd(int fd, uint32_t events);
  bool Watches(int fd) const { return fds_.count(fd) != 0; }
  void RemoveFd(int fd);

  // Calls `callback` once, `delay_ms` from now (monotonic clock).
  TimerId AddTimer(int64_t delay_ms, TimerCallback callback);
  void CancelTimer(TimerId id);

  // Dispatches until Stop() is called or nothing is watched and no timer is pending.
  void Run();
  // Dispatches one round, waiting at most `max_wait_ms` (-1: until something happens).
  void RunOnce(int max_wait_ms);
  void Stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

  static int64_t NowMs();  // CLOCK_MONOTONIC in milliseconds

 private:
  int NextTimeoutMs(int max_wait_ms) const;
  void FireDueTimers();

  UniqueFd epoll_;
  bool stopped_ = false;
  std::unordered_map<int, std::shared_ptr<FdCallback>> fds_;
  TimerId next_timer_ = 1;
  std::multimap<int64_t, TimerId> deadlines_;
  std::unordered_map<TimerId, std::pair<int64_t, TimerCallback>> timers_;
};

}  // namespace skillmcp
