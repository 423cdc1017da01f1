// The declared network mode's channel between a run's mirror (worker/egress_relay.h) and
// its broker: one SOCK_SEQPACKET socketpair per run, one message per frame. The mirror
// asks for each connection the script opened to an allotted address, reports each closed
// connection's byte counts (at the run's end, those of each still open) and each attempt
// it refused, then closes its end when it exits; the broker answers each request
// with the connected socket (SCM_RIGHTS, in the same message) or a refusal. The mirror
// runs as the run's user: the broker trusts nothing it says beyond its own allowlist
// check (shared/egress_allowlist.h) and the bounds below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace skillmcp {

inline constexpr uint32_t kEgressChannelVersion = 1;
inline constexpr size_t kEgressFrameMaxBytes = 512;  // one message, never more
inline constexpr size_t kEgressHostMaxBytes = 253;

// mirror -> broker: the script connected to `host` (a name the run's resolver allotted,
// as the resolver saw it) on `port`; `id` is the mirror's, unique within the run.
struct EgressConnect {
  uint32_t id = 0;
  std::string host;
  uint16_t port = 0;
  bool operator==(const EgressConnect&) const = default;
};

// mirror -> broker: a connection the broker opened is over, with the bytes it carried.
struct EgressClosed {
  uint32_t id = 0;
  uint64_t bytes_out = 0;  // script -> host
  uint64_t bytes_in = 0;   // host -> script
  bool operator==(const EgressClosed&) const = default;
};

// mirror -> broker: something the mirror refused on its own: a name the resolver does not
// allot ("dns", `target` the name, port 0), or a packet to an address outside the run's
// namespace ("tcp" or "udp", `target` the address, the destination port).
struct EgressRefused {
  std::string kind;
  std::string target;
  uint16_t port = 0;
  bool operator==(const EgressRefused&) const = default;
};

// mirror -> broker, once, at the run's end: how many refusals the mirror counted past the
// ones it reported (it reports a bounded number of different ones), so that the receipt's
// count of refusals left out is whole.
struct EgressRefusedUntold {
  uint32_t count = 0;
  bool operator==(const EgressRefusedUntold&) const = default;
};

// broker -> mirror: the connection for `id`; the frame carries its socket.
struct EgressOpened {
  uint32_t id = 0;
  bool operator==(const EgressOpened&) const = default;
};

// broker -> mirror: no connection for `id`; `err` is the errno the script's socket is
// closed with (the mirror resets it).
struct EgressDenied {
  uint32_t id = 0;
  int32_t err = 0;
  bool operator==(const EgressDenied&) const = default;
};

using EgressFromMirror =
    std::variant<EgressConnect, EgressClosed, EgressRefused, EgressRefusedUntold>;
using EgressToMirror = std::variant<EgressOpened, EgressDenied>;

// Frames: "SMEC" u32 version u8 type, then the fields little-endian, strings as u32
// length + bytes. Encoders return nothing for a value the decoder would refuse.
std::optional<std::string> EncodeEgressFromMirror(const EgressFromMirror& message);
std::optional<std::string> EncodeEgressToMirror(const EgressToMirror& message);

// Strict: the magic, the version, a known type for the direction, every field in range
// (a host of 1 to kEgressHostMaxBytes bytes of [a-z0-9.-] or an address literal's
// characters, a port 1..65535 where one is required, a kind of "dns", "tcp" or "udp",
// an errno 1..4095, an untold count of at least 1), no trailing byte.
std::optional<EgressFromMirror> DecodeEgressFromMirror(std::string_view frame);
std::optional<EgressToMirror> DecodeEgressToMirror(std::string_view frame);

}  // namespace skillmcp
