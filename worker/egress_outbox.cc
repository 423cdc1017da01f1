#include "worker/egress_outbox.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "shared/monotonic.h"

namespace skillmcp::worker {

bool EgressOutbox::Send(std::string frame) {
  if (broken_ || queue_.size() >= kEgressOutboxMaxFrames) return false;
  queue_.push_back(std::move(frame));
  Flush();
  return !broken_;
}

void EgressOutbox::Flush() {
  while (!broken_ && !queue_.empty()) {
    const std::string& frame = queue_.front();
    // why MSG_DONTWAIT: a broker that is slow to read must not stop the mirror, which
    // relays the run's other connections and kills the run when the broker dies.
    const ssize_t n = send(fd_, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == ENOBUFS)) return;  // sent when there is room
    // One message per frame (SOCK_SEQPACKET): sent whole, or the channel is broken.
    if (n != static_cast<ssize_t>(frame.size())) {
      broken_ = true;
      queue_.clear();
      return;
    }
    queue_.pop_front();
  }
}

bool EgressOutbox::FlushBy(int64_t deadline_ms) {
  for (;;) {
    Flush();
    if (broken_ || queue_.empty()) return queue_.empty() && !broken_;
    const int64_t left = deadline_ms - MonotonicMs();
    if (left <= 0) return false;
    pollfd p{fd_, POLLOUT, 0};
    if (poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return false;
  }
}

}  // namespace skillmcp::worker
