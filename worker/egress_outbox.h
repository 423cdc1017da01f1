// The mirror's frames to the broker on the egress channel (shared/egress_channel.h), sent
// in order and never dropped while the broker lives: a frame the channel cannot take now
// waits in a queue and goes when the channel has room (the mirror polls for it), so a burst
// of reports neither stops the mirror nor loses a byte count from the receipt. At the
// run's end what waits is sent blocking, bounded in time (FlushBy): a broker that stopped
// reading cannot keep the mirror, and so the run's end, waiting for ever.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace skillmcp::worker {

// Frames waiting at most. Bounded by what the broker has not read: refusals
// (kEgressMaxReports), a request per connection opening and a report per connection
// closed; a broker that reads none of it is stuck, and the mirror's memory stays bounded.
inline constexpr size_t kEgressOutboxMaxFrames = 4096;

class EgressOutbox {
 public:
  explicit EgressOutbox(int fd) : fd_(fd) {}  // the channel, owned by the caller

  // Queues `frame` behind what waits and sends what the channel takes now. False when the
  // channel is broken (the broker is gone) or the queue is full: the frame is not sent.
  bool Send(std::string frame);
  // Whether frames wait for room (poll the channel for POLLOUT).
  bool waiting() const { return !queue_.empty(); }
  // Sends what the channel takes now.
  void Flush();
  // Sends everything that waits, waiting for room until `deadline_ms` (MonotonicMs);
  // whether all of it went.
  bool FlushBy(int64_t deadline_ms);

 private:
  int fd_;
  std::deque<std::string> queue_;
  bool broken_ = false;
};

}  // namespace skillmcp::worker
