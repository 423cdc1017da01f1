#include "shared/utf8.h"

#include <cstdint>

namespace skillmcp {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 when it is malformed or cut.
size_t SequenceLength(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = at(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return len;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t n = SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

size_t Utf8SafePrefixLength(std::string_view s) {
  // Walk back over at most three continuation bytes to the last lead byte; drop it when
  // its sequence does not fit.
  size_t end = s.size();
  size_t k = end;
  for (int back = 0; back < 4 && k > 0; ++back) {
    --k;
    auto b = static_cast<uint8_t>(s[k]);
    if ((b & 0xC0) != 0x80) {  // a lead byte (or ASCII)
      if (b < 0x80) return end;
      size_t want = b >= 0xF0 ? 4 : (b >= 0xE0 ? 3 : 2);
      return (end - k) >= want ? end : k;
    }
  }
  return end;
}

}  // namespace skillmcp
