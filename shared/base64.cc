#include "shared/base64.h"

#include <array>
#include <cstdint>

namespace skillmcp {
namespace {

constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Two output characters for every 12-bit group: half the lookups of a 6-bit table.
struct PairTable {
  std::array<char, 8192> chars{};
  constexpr PairTable() {
    for (int v = 0; v < 4096; ++v) {
      chars[2 * v] = kAlphabet[v >> 6];
      chars[2 * v + 1] = kAlphabet[v & 63];
    }
  }
};
constexpr PairTable kPairs;

}  // namespace

void AppendBase64(std::string* out, std::string_view bytes) {
  const auto* in = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  const size_t at = out->size();
  out->resize(at + (n + 2) / 3 * 4);
  char* o = out->data() + at;
  size_t i = 0;
  for (; i + 3 <= n; i += 3, o += 4) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    const char* hi = &kPairs.chars[2 * (v >> 12)];
    const char* lo = &kPairs.chars[2 * (v & 0xFFF)];
    o[0] = hi[0];
    o[1] = hi[1];
    o[2] = lo[0];
    o[3] = lo[1];
  }
  if (i < n) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (i + 1 < n ? uint32_t{in[i + 1]} << 8 : 0);
    o[0] = kAlphabet[v >> 18];
    o[1] = kAlphabet[(v >> 12) & 63];
    o[2] = i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    o[3] = '=';
  }
}

}  // namespace skillmcp
