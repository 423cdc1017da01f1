#include "broker/mcp/line_reader.h"

namespace skillmcp {

void LineReader::Deliver(const LineFn& on_line) {
  std::string_view line(buf_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.empty()) on_line(line);
  buf_.clear();
}

void LineReader::Feed(std::string_view data, const LineFn& on_line,
                      const OverflowFn& on_overflow) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view chunk = data.substr(0, nl);
    if (discarding_) {
      // Why: an oversized line is dropped as it streams in, so a client cannot make
      // the broker allocate more than the cap.
      if (nl == std::string_view::npos) return;
      discarding_ = false;
    } else if (buf_.size() + chunk.size() > max_line_) {
      buf_.clear();
      buf_.shrink_to_fit();
      on_overflow();
      if (nl == std::string_view::npos) {
        discarding_ = true;
        return;
      }
    } else {
      buf_.append(chunk);
      if (nl == std::string_view::npos) return;
      Deliver(on_line);
    }
    data.remove_prefix(nl + 1);
  }
}

void LineReader::Finish(const LineFn& on_line) {
  if (!discarding_) Deliver(on_line);
  discarding_ = false;
  buf_.clear();
}

}  // namespace skillmcp
