// The worker protocol's wire primitives (shared/worker_protocol.h): little-endian
// integers and length-prefixed strings, written by the encoders and read back by a cursor
// that checks what is left before every read and every allocation. Only the protocols'
// codecs include this (shared/run_spec_codec.cc, cell_spec_codec.cc,
// worker_frames_codec.cc) and the egress codecs (egress_channel.cc, egress_wire.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shared/path_prefix.h"
#include "shared/worker_protocol.h"

namespace skillmcp::wire {

// The largest errno a message may carry: the kernel's own ceiling (MAX_ERRNO). One
// definition for every codec (a unity build puts several in one translation unit).
inline constexpr int32_t kMaxErrno = 4095;

inline void PutU8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }

inline void PutU16(std::string& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline void PutString(std::string& out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

inline void PutStrings(std::string& out, const std::vector<std::string>& list) {
  PutU32(out, static_cast<uint32_t>(list.size()));
  for (const auto& s : list) PutString(out, s);
}

inline void PutModuleDirs(std::string& out, const std::vector<ModuleDir>& dirs) {
  PutU32(out, static_cast<uint32_t>(dirs.size()));
  for (const ModuleDir& d : dirs) {
    PutString(out, d.path);
    PutU64(out, d.dev);
    PutU64(out, d.ino);
  }
}

// Into a fixed buffer, for the frames written where nothing may allocate.
inline void PutU32At(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// A cursor over untrusted bytes: every read checks the remaining length first.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool U8(uint8_t& v) {
    if (in_.size() < 1) return false;
    v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U16(uint16_t& v) {
    if (in_.size() < 2) return false;
    v = static_cast<uint16_t>(uint16_t{static_cast<uint8_t>(in_[0])} |
                              uint16_t{static_cast<uint8_t>(in_[1])} << 8);
    in_.remove_prefix(2);
    return true;
  }
  bool U32(uint32_t& v) {
    if (in_.size() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t& v) {
    if (in_.size() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool Bool(bool& v) {
    uint8_t b = 0;
    if (!U8(b) || b > 1) return false;  // only 0 or 1: no second meaning hides in a flag
    v = b == 1;
    return true;
  }
  bool String(std::string& s) {
    uint32_t len = 0;
    if (!U32(len) || len > in_.size()) return false;  // length checked before allocating
    s.assign(in_.substr(0, len));
    in_.remove_prefix(len);
    return true;
  }
  // `budget` is how many strings may still be read across argv and envp.
  bool Strings(std::vector<std::string>& list, size_t& budget) {
    uint32_t count = 0;
    if (!U32(count) || count > budget) return false;
    // Each string costs at least its 4-byte length: a count the input cannot hold is
    // refused before reserving anything.
    if (count > in_.size() / 4) return false;
    budget -= count;
    list.resize(count);
    for (auto& s : list)
      if (!String(s)) return false;
    return true;
  }
  // At most `max` entries of (str path, u64 dev, u64 ino).
  bool ModuleDirs(std::vector<ModuleDir>& dirs, size_t max) {
    uint32_t count = 0;
    if (!U32(count) || count > max) return false;
    // Each entry costs at least 20 bytes (an empty path's length, dev, ino): a count the
    // input cannot hold is refused before reserving anything.
    if (count > in_.size() / 20) return false;
    dirs.resize(count);
    for (ModuleDir& d : dirs)
      if (!String(d.path) || !U64(d.dev) || !U64(d.ino)) return false;
    return true;
  }
  // Exactly `n` bytes, copied into `out`.
  bool Bytes(size_t n, std::string& out) {
    if (n > in_.size()) return false;
    out.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool Magic(const char (&magic)[4]) {
    if (in_.size() < 4 || in_.substr(0, 4) != std::string_view(magic, 4)) return false;
    in_.remove_prefix(4);
    return true;
  }
  bool AtEnd() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// A path field that is either unset or a real path: both descriptions carry such fields.
inline bool IsNormalisedOrEmpty(std::string_view s) {
  return s.empty() || IsNormalisedAbsolutePath(s);
}

}  // namespace skillmcp::wire
