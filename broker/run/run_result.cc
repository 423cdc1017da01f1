#include "broker/run/run_result.h"

#include <algorithm>

namespace skillmcp {

void StreamCapture::Append(const char* bytes, size_t n) {
  total += n;
  size_t room = kStreamCaptureBytes - std::min(data.size(), kStreamCaptureBytes);
  if (n > room) truncated = true;
  data.append(bytes, std::min(n, room));
}

}  // namespace skillmcp
