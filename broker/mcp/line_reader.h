// Newline-delimited framing for JSON-RPC over stdio, with a hard cap per line.
// A line over the cap is never held whole: its bytes are discarded as they arrive and
// the caller is told once, so the server refuses it and keeps serving.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace skillmcp {

inline constexpr size_t kMaxMessageBytes = 4 * 1024 * 1024;  // docs/wire.md §10
static_assert(kMaxMessageBytes % (1 << 20) == 0, "the refusal states it in whole MiB");

class LineReader {
 public:
  using LineFn = std::function<void(std::string_view line)>;
  using OverflowFn = std::function<void()>;

  explicit LineReader(size_t max_line = kMaxMessageBytes) : max_line_(max_line) {}

  // Splits `data` into lines; a trailing '\r' is dropped, empty lines are skipped.
  void Feed(std::string_view data, const LineFn& on_line, const OverflowFn& on_overflow);
  // At end of input: delivers a final line that had no newline.
  void Finish(const LineFn& on_line);

 private:
  void Deliver(const LineFn& on_line);

  size_t max_line_;
  std::string buf_;
  bool discarding_ = false;
};

}  // namespace skillmcp
