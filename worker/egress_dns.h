// The declared network mode's resolver: the run's /etc/resolv.conf names 127.0.0.1, where
// the mirror answers each query from the run's allowlist alone. An allowed name gets the
// loopback address the mirror allotted it (and listens on); any other name gets NXDOMAIN
// at once, so the script's resolver fails fast instead of waiting for a server it cannot
// reach. Pure: bytes in, bytes out.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp::worker {

// The answer to give for one name: its address, or that it does not exist.
using AllotAddress = std::function<std::optional<in_addr>(std::string_view name)>;

// Seconds a client may cache an answer: short, the allotment holds for the run anyway.
inline constexpr uint32_t kEgressDnsTtl = 5;

struct DnsQuestion {
  uint16_t id = 0;
  std::string name;  // lower-case, no trailing dot; "" for the root
  uint16_t type = 0;
  uint16_t qclass = 0;
};

// The question of a standard query with exactly one question, or nothing (not a query,
// another opcode, compression or a label over 63 bytes in the question, a name over 253
// characters, a truncated message).
std::optional<DnsQuestion> ParseDnsQuery(std::span<const uint8_t> message);

// The reply to `message`: for an A query of an allowed name (IN class), one A record;
// for another type of an allowed name, no record (NOERROR: the name exists, nothing of that
// type); for a name `allot` refuses, NXDOMAIN; for a query ParseDnsQuery refuses but whose
// header can be read, FORMERR (NOTIMP for another opcode); nothing when not even the
// header can be read or the message is a response. The question is echoed as received
// (letter case included), additional records (EDNS) are not answered.
std::optional<std::vector<uint8_t>> AnswerDnsQuery(std::span<const uint8_t> message,
                                                   const AllotAddress& allot);

}  // namespace skillmcp::worker
