// The declared network mode's other door: every address that is not one the run's resolver
// allotted is routed to a tun device the mirror reads, and each packet there is an attempt
// to reach something undeclared (an IP literal, a name resolved elsewhere, UDP). The
// mirror answers each TCP segment with a reset and each UDP datagram with an ICMP port
// unreachable, as a host with nothing listening would: the script's connect fails at once
// with ECONNREFUSED instead of waiting out a timeout, and the attempt goes on the receipt.
// Pure: the packet read from the device in, the packet to write back and the attempt out.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace skillmcp::worker {

struct RefusedAttempt {
  std::string protocol;  // "tcp" or "udp"
  std::string address;   // the destination, as inet_ntop writes it
  uint16_t port = 0;     // the destination port
  bool operator==(const RefusedAttempt&) const = default;
};

struct Refusal {
  std::vector<uint8_t> reply;           // empty: nothing to send back
  std::optional<RefusedAttempt> attempt;  // set for a connection or datagram tried
};

// The answer to one IPv4 or IPv6 packet (no tun header: the device is opened with
// IFF_NO_PI). A TCP SYN gets RST+ACK and is an attempt; another TCP segment gets a RST
// (a reset is never answered); a UDP datagram gets an ICMP or ICMPv6 port unreachable
// quoting it and is an attempt; anything else (ICMP, a fragment after the first, an
// IPv6 extension header, a malformed or truncated packet, a bad header checksum) gets
// nothing and is no attempt.
Refusal RefusePacket(std::span<const uint8_t> packet);

}  // namespace skillmcp::worker
