#include "shared/utf8.h"

#include <cstdint>
#include <cstring>
#include <string>

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

// Whether s[i..] is a proper prefix of some well-formed sequence, cut short by the end:
// padded to four bytes with continuation bytes its lead accepts, it must become a
// sequence longer than what is there.
bool IsCutSequence(std::string_view s, size_t i) {
  const size_t left = s.size() - i;
  if (left >= 4) return false;
  std::string padded(s.substr(i));
  const auto b0 = static_cast<uint8_t>(padded[0]);
  if (left == 1) padded.push_back(static_cast<char>(b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80));
  padded.resize(4, static_cast<char>(0x80));
  return SequenceLength(padded, 0) > left;
}

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t Utf8SequenceLength(std::string_view s, size_t i) { return SequenceLength(s, i); }

std::string RepairUtf8(std::string_view bytes, bool cut) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    size_t n = SequenceLength(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    if (cut && IsCutSequence(bytes, i)) break;
    out += kReplacement;
    ++i;
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Runs of ASCII, the common case, are checked 16 bytes at a time.
    while (i + 16 <= s.size()) {
      uint64_t a, b;
      std::memcpy(&a, s.data() + i, 8);
      std::memcpy(&b, s.data() + i + 8, 8);
      if (((a | b) & 0x8080808080808080ULL) != 0) break;
      i += 16;
    }
    if (i >= s.size()) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
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
