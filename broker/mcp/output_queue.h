// The server's outgoing messages: queued, and written only as fast as the client reads,
// so a client that stops reading never stops the event loop (timeouts, kills, reaping,
// signals). docs/wire.md §10 states the numbers below.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "broker/loop/byte_queue.h"
#include "broker/loop/event_loop.h"
#include "broker/loop/stdio_fd.h"

namespace skillmcp {

// At this many queued bytes the session stops reading requests (backpressure); it reads
// again once the queue is down to half.
inline constexpr size_t kOutputPauseBytes = 4 * 1024 * 1024;
// Output waiting and not one byte taken for this long: the client is dropped.
inline constexpr int64_t kStalledClientGraceMs = 30'000;
// At exit, queued output gets this long without progress to reach the client.
inline constexpr int kExitDrainStallMs = 2'000;
// ... and this long in all: a client taking a byte now and then cannot keep the broker
// from exiting.
inline constexpr int64_t kExitDrainTotalMs = 10'000;

class OutputQueue {
 public:
  struct Events {
    std::function<void()> below_pause;  // after a write, at most half kOutputPauseBytes queued
    std::function<void()> stalled;      // kStalledClientGraceMs without progress
    std::function<void()> broken;       // the client is gone (write error)
  };

  OutputQueue(EventLoop& loop, int fd);
  ~OutputQueue();

  // Chooses how to write (see stdio_fd.h); false (errno set) when it cannot be watched.
  bool Start(Events events);
  void Push(std::string line);
  // One line in three parts, queued together and written with one writev where the pipe
  // takes it, so a multi-MiB body is never copied to join it to its head.
  void Push(std::string head, std::string body, std::string tail);
  size_t queued_bytes() const { return queue_.bytes(); }
  bool over_pause() const { return queue_.bytes() >= kOutputPauseBytes; }
  // Writes what is queued, waiting at most `stall_ms` each time no byte moves and
  // `total_ms` in all (exit).
  void DrainBlocking(int stall_ms, int64_t total_ms = kExitDrainTotalMs);

 private:
  enum class Step { kDone, kWouldBlock, kBroken };
  Step WriteSome();
  void Flush();
  void Break(const char* why);  // nullptr: errno says why
  void Watch(bool want);
  void ArmStallTimer();
  void OnStallTimer();

  EventLoop& loop_;
  int raw_fd_;
  StdioFd out_;
  Events events_;
  ByteQueue queue_;
  bool watching_ = false;  // EPOLLOUT requested
  bool broken_ = false;
  int64_t last_progress_ms_ = 0;
  EventLoop::TimerId stall_timer_ = 0;
};

}  // namespace skillmcp
