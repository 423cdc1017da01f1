#include "shared/json_escape.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace skillmcp {
namespace {

// The escaped form of each byte at one and at two levels; empty for a byte left as is.
struct EscapeTable {
  std::array<std::string, 256> level[2];
  EscapeTable() {
    for (int c = 0; c < 256; ++c) {
      std::string once = EscapeOnce(static_cast<char>(c));
      if (once.size() == 1) continue;  // clean at every level
      level[0][c] = once;
      for (char k : once) level[1][c] += EscapeOnce(k);
    }
  }
  static std::string EscapeOnce(char ch) {
    switch (ch) {
      case '"': return "\\\"";
      case '\\': return "\\\\";
      case '\b': return "\\b";
      case '\f': return "\\f";
      case '\n': return "\\n";
      case '\r': return "\\r";
      case '\t': return "\\t";
      default: break;
    }
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20) return std::string(1, ch);
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
  }
};

const EscapeTable& Table() {
  static const EscapeTable table;
  return table;
}

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// Non-zero when some byte of `w` may need escaping (a control byte, '"' or '\\'). False
// positives are possible (the word is then looked at byte by byte); misses are not.
inline uint64_t MayNeedEscape(uint64_t w) {
  auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  uint64_t control = (w - 0x20 * kOnes) & ~w & kHighs;  // some byte below 0x20
  return control | has_zero(w ^ ('"' * kOnes)) | has_zero(w ^ ('\\' * kOnes));
}

// Length of the leading run of bytes that no level escapes.
size_t CleanRun(const char* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (MayNeedEscape(w) != 0) break;
  }
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c == '"' || c == '\\') break;
  }
  return i;
}

}  // namespace

void AppendJsonEscaped(std::string* out, std::string_view s, int levels) {
  const auto& table = Table().level[levels >= 2 ? 1 : 0];
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    size_t run = CleanRun(p, n);
    out->append(p, run);
    p += run;
    n -= run;
    if (n == 0) break;
    out->append(table[static_cast<unsigned char>(*p)]);
    ++p;
    --n;
  }
}

}  // namespace skillmcp
