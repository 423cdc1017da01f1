// Byte strings waiting for a descriptor that takes them as fast as its reader reads: kept
// in order, written with writev as far as the descriptor takes, never waiting for it. The
// session's output (broker/mcp/output_queue.h) and the audit trail on stderr
// (broker/audit/audit_sink.h) share it.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "broker/loop/stdio_fd.h"

namespace skillmcp {

class ByteQueue {
 public:
  enum class Step { kProgress, kWouldBlock, kBroken };

  void Push(std::string bytes);
  // One writev of what is queued (up to 64 strings). kProgress also for EINTR (call
  // again); `finished`, when given, counts the strings written to their end.
  Step WriteSome(const StdioFd& out, size_t* finished = nullptr);
  void Clear();

  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }  // strings, the one partly written included
  size_t bytes() const { return bytes_; }
  bool front_started() const { return head_offset_ != 0; }

 private:
  std::deque<std::string> queue_;
  size_t head_offset_ = 0;  // bytes of queue_.front() already written
  size_t bytes_ = 0;
};

}  // namespace skillmcp
