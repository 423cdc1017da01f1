// The egress helper's protocol (skill-mcp-egress, egress/): the broker asks it to open one
// outbound TCP connection, and it answers with the connected socket or an errno. One
// message per request and per answer on a unix SOCK_SEQPACKET socket, little-endian,
// decoded strictly: a message that is not exactly one of these is refused whole.
//
//   request  (broker → helper): "SMEQ" u32 version u32 id u16 port u8 flags
//                               u16 hostlen, hostlen bytes of host
//   answer   (helper → broker): "SMEA" u32 version u32 id i32 error u8 family
//                               u8[16] address u16 port
//                               + exactly when error is 0, one descriptor (SCM_RIGHTS):
//                                 the connected socket, non-blocking (the receiver sets
//                                 the mode it wants; the flag is the socket's, shared)
//
// The helper trusts no part of a request to be an instruction beyond "connect to this
// name or address on this port": which hosts a run may reach is the broker's decision
// (shared/egress_allowlist.h), made before it asks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/unique_fd.h"

namespace skillmcp {

inline constexpr uint32_t kEgressProtocolVersion = 1;

// Request flags: bit 0 lets the helper connect to a loopback, link-local or other
// non-global address (egress/address_class.h); every other bit must be 0.
inline constexpr uint8_t kEgressAllowLocal = 0x01;

struct EgressRequest {
  uint32_t id = 0;    // the broker's own; the answer carries it back
  std::string host;   // NormaliseEgressHost(host, /*wildcard=*/false) == host
  uint16_t port = 0;  // 1..65535
  bool allow_local = false;
  bool operator==(const EgressRequest&) const = default;
};

// The largest request: the header and a host of 253 bytes (NormaliseEgressHost's bound).
inline constexpr size_t kEgressRequestMaxBytes = 4 + 4 + 4 + 2 + 1 + 2 + 253;

// The errors an answer carries besides 0, each a positive errno (egress/README.md says
// when each is sent):
//   ENOENT       the name has no IPv4 or IPv6 address
//   EIO          the resolver could not answer (no name server reachable, SERVFAIL)
//   EACCES       every address is refused (not global, a metadata address, the host's
//                own) and the request did not allow local ones
//   EAGAIN       the helper has as many requests in flight as it takes
//   EINVAL       the request was malformed (its header was readable, the rest not)
//   ETIMEDOUT    the last address tried did not answer within the connect timeout
//   otherwise    connect's own errno for the last address tried (ECONNREFUSED, ...)
struct EgressAnswer {
  uint32_t id = 0;
  int32_t error = 0;  // 0 or 1..4095
  // The peer connected to when error is 0 (AF_INET or AF_INET6); on an error, the last
  // address tried or refused, or 0 (and all zeros) when none was.
  uint8_t family = 0;
  std::array<uint8_t, 16> address{};  // an IPv4 address in the first 4 bytes, the rest 0
  uint16_t port = 0;                  // 0 exactly when family is 0
  bool operator==(const EgressAnswer&) const = default;
};

inline constexpr size_t kEgressAnswerBytes = 4 + 4 + 4 + 4 + 1 + 16 + 2;

// nullopt when the request is not one DecodeEgressRequest would accept.
std::optional<std::string> EncodeEgressRequest(const EgressRequest& request);

// Strict: magic, version, a port above 0, no flag but kEgressAllowLocal, a host of 1..253
// bytes that is already normalised (a DNS name or an IP literal, no wildcard), nothing
// after it.
std::optional<EgressRequest> DecodeEgressRequest(std::string_view bytes);

// The id of a message that starts like a request ("SMEQ", this version, an id), so that a
// request malformed after its header can be answered EINVAL rather than dropped.
std::optional<uint32_t> PeekEgressRequestId(std::string_view bytes);

// False (nothing written) when the answer is one DecodeEgressAnswer would refuse.
bool EncodeEgressAnswer(const EgressAnswer& answer, char (&out)[kEgressAnswerBytes]);

// Strict: exactly kEgressAnswerBytes, magic, version, error 0..4095, family 0, AF_INET or
// AF_INET6 with the bytes it does not use zero, port 0 exactly when family is 0, and a
// family other than 0 when error is 0.
std::optional<EgressAnswer> DecodeEgressAnswer(std::string_view bytes);

// The answer a received message carries (shared/fd_packet.h), with its descriptor: nothing,
// and the descriptor closed, unless the bytes decode and a socket came exactly when the
// error is 0.
std::optional<EgressAnswer> TakeEgressAnswer(std::string_view bytes, UniqueFd& fd);

}  // namespace skillmcp
