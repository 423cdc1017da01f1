#include "broker/loop/byte_queue.h"

#include <sys/uio.h>

#include <cerrno>

namespace skillmcp {
namespace {
constexpr int kMaxIov = 64;
}  // namespace

void ByteQueue::Push(std::string bytes) {
  if (bytes.empty()) return;
  bytes_ += bytes.size();
  queue_.push_back(std::move(bytes));
}

ByteQueue::Step ByteQueue::WriteSome(const StdioFd& out, size_t* finished) {
  iovec iov[kMaxIov];
  int n = 0;
  for (auto it = queue_.begin(); it != queue_.end() && n < kMaxIov; ++it, ++n) {
    const size_t skip = n == 0 ? head_offset_ : 0;
    iov[n].iov_base = it->data() + skip;
    iov[n].iov_len = it->size() - skip;
  }
  ssize_t w = out.Write(iov, n);
  if (w < 0) {
    if (errno == EINTR) return Step::kProgress;  // nothing written; try again
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::kWouldBlock;
    return Step::kBroken;
  }
  if (w == 0) return Step::kWouldBlock;  // no room and no error: wait, never spin
  size_t left = static_cast<size_t>(w);
  bytes_ -= left;
  while (left > 0) {
    const size_t rest = queue_.front().size() - head_offset_;
    if (left < rest) {
      head_offset_ += left;
      break;
    }
    left -= rest;
    head_offset_ = 0;
    queue_.pop_front();
    if (finished != nullptr) ++*finished;
  }
  return Step::kProgress;
}

void ByteQueue::Clear() {
  queue_.clear();
  head_offset_ = 0;
  bytes_ = 0;
}

}  // namespace skillmcp
