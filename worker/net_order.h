// Network byte order (big-endian) fields, as the declared network mode's mirror reads and
// writes them: the resolver's DNS messages (egress_dns.cc) and the refusals' IP, TCP, UDP
// and ICMP headers (egress_refuse.cc). The bounds are the caller's: each parser checks a
// message's size before it reads or writes a field there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace skillmcp::worker {

inline uint16_t Read16(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint16_t>(p[at] << 8 | p[at + 1]);
}

inline uint32_t Read32(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint32_t>(Read16(p, at)) << 16 | Read16(p, at + 2);
}

// Over the two bytes at `at`.
inline void Write16(std::vector<uint8_t>* p, size_t at, uint16_t v) {
  (*p)[at] = static_cast<uint8_t>(v >> 8);
  (*p)[at + 1] = static_cast<uint8_t>(v);
}

inline void Write32(std::vector<uint8_t>* p, size_t at, uint32_t v) {
  Write16(p, at, static_cast<uint16_t>(v >> 16));
  Write16(p, at + 2, static_cast<uint16_t>(v));
}

// At the end of `out`.
inline void Append16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

inline void Append32(std::vector<uint8_t>* out, uint32_t v) {
  Append16(out, static_cast<uint16_t>(v >> 16));
  Append16(out, static_cast<uint16_t>(v));
}

}  // namespace skillmcp::worker
