#include "shared/egress_channel.h"

#include "shared/worker_wire.h"

namespace skillmcp {
namespace {

using wire::PutString;
using wire::PutU32;
using wire::PutU64;
using wire::PutU8;
using wire::Reader;

constexpr char kMagic[4] = {'S', 'M', 'E', 'C'};
constexpr uint8_t kConnect = 1, kClosed = 2, kRefused = 3, kOpened = 4, kDenied = 5, kUntold = 6;

bool IsHostText(std::string_view s) {
  if (s.empty() || s.size() > kEgressHostMaxBytes) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                    c == ':';
    if (!ok) return false;
  }
  return true;
}

bool IsKind(std::string_view k) { return k == "dns" || k == "tcp" || k == "udp"; }

bool Valid(const EgressConnect& m) { return IsHostText(m.host) && m.port != 0; }
bool Valid(const EgressClosed&) { return true; }
bool Valid(const EgressRefused& m) {
  if (!IsKind(m.kind) || !IsHostText(m.target)) return false;
  return m.kind == "dns" ? m.port == 0 : true;
}
bool Valid(const EgressRefusedUntold& m) { return m.count != 0; }
bool Valid(const EgressOpened&) { return true; }
bool Valid(const EgressDenied& m) { return m.err >= 1 && m.err <= wire::kMaxErrno; }

std::string Header(uint8_t type) {
  std::string out(kMagic, 4);
  PutU32(out, kEgressChannelVersion);
  PutU8(out, type);
  return out;
}

std::optional<std::string> Done(std::string out) {
  if (out.size() > kEgressFrameMaxBytes) return std::nullopt;
  return out;
}

bool ReadPort(Reader& r, uint16_t& port) {
  uint32_t v = 0;
  if (!r.U32(v) || v > 65535) return false;
  port = static_cast<uint16_t>(v);
  return true;
}

// The frame's type after its magic and version, or nothing.
std::optional<uint8_t> ReadHeader(Reader& r, std::string_view frame) {
  if (frame.size() > kEgressFrameMaxBytes) return std::nullopt;
  uint32_t version = 0;
  uint8_t type = 0;
  if (!r.Magic(kMagic) || !r.U32(version) || version != kEgressChannelVersion || !r.U8(type))
    return std::nullopt;
  return type;
}

template <typename T>
std::optional<T> Checked(Reader& r, T m) {
  if (!r.AtEnd() || !Valid(m)) return std::nullopt;
  return m;
}

}  // namespace

std::optional<std::string> EncodeEgressFromMirror(const EgressFromMirror& message) {
  return std::visit(
      [](const auto& m) -> std::optional<std::string> {
        using T = std::decay_t<decltype(m)>;
        if (!Valid(m)) return std::nullopt;
        std::string out;
        if constexpr (std::is_same_v<T, EgressConnect>) {
          out = Header(kConnect);
          PutU32(out, m.id);
          PutString(out, m.host);
          PutU32(out, m.port);
        } else if constexpr (std::is_same_v<T, EgressClosed>) {
          out = Header(kClosed);
          PutU32(out, m.id);
          PutU64(out, m.bytes_out);
          PutU64(out, m.bytes_in);
        } else if constexpr (std::is_same_v<T, EgressRefused>) {
          out = Header(kRefused);
          PutString(out, m.kind);
          PutString(out, m.target);
          PutU32(out, m.port);
        } else {
          out = Header(kUntold);
          PutU32(out, m.count);
        }
        return Done(std::move(out));
      },
      message);
}

std::optional<std::string> EncodeEgressToMirror(const EgressToMirror& message) {
  return std::visit(
      [](const auto& m) -> std::optional<std::string> {
        using T = std::decay_t<decltype(m)>;
        if (!Valid(m)) return std::nullopt;
        std::string out;
        if constexpr (std::is_same_v<T, EgressOpened>) {
          out = Header(kOpened);
          PutU32(out, m.id);
        } else {
          out = Header(kDenied);
          PutU32(out, m.id);
          PutU32(out, static_cast<uint32_t>(m.err));
        }
        return Done(std::move(out));
      },
      message);
}

std::optional<EgressFromMirror> DecodeEgressFromMirror(std::string_view frame) {
  Reader r(frame);
  std::optional<uint8_t> type = ReadHeader(r, frame);
  if (!type) return std::nullopt;
  if (*type == kConnect) {
    EgressConnect m;
    if (!r.U32(m.id) || !r.String(m.host) || !ReadPort(r, m.port)) return std::nullopt;
    return Checked(r, m);
  }
  if (*type == kClosed) {
    EgressClosed m;
    if (!r.U32(m.id) || !r.U64(m.bytes_out) || !r.U64(m.bytes_in)) return std::nullopt;
    return Checked(r, m);
  }
  if (*type == kRefused) {
    EgressRefused m;
    if (!r.String(m.kind) || !r.String(m.target) || !ReadPort(r, m.port)) return std::nullopt;
    return Checked(r, m);
  }
  if (*type == kUntold) {
    EgressRefusedUntold m;
    if (!r.U32(m.count)) return std::nullopt;
    return Checked(r, m);
  }
  return std::nullopt;
}

std::optional<EgressToMirror> DecodeEgressToMirror(std::string_view frame) {
  Reader r(frame);
  std::optional<uint8_t> type = ReadHeader(r, frame);
  if (!type) return std::nullopt;
  if (*type == kOpened) {
    EgressOpened m;
    if (!r.U32(m.id)) return std::nullopt;
    return Checked(r, m);
  }
  if (*type == kDenied) {
    EgressDenied m;
    uint32_t err = 0;
    if (!r.U32(m.id) || !r.U32(err)) return std::nullopt;
    m.err = static_cast<int32_t>(err);
    return Checked(r, m);
  }
  return std::nullopt;
}

}  // namespace skillmcp
