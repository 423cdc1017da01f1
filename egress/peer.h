// One TCP peer as the helper's answer names it (shared/egress_wire.h): a family, the
// address in 16 bytes (IPv4 in the first 4) and a port, with the conversions to and from
// the socket API's addresses.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>

namespace skillmcp::egress {

struct Peer {
  uint8_t family = 0;  // AF_INET or AF_INET6
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;
  bool operator==(const Peer&) const = default;
};

// Nothing for a family other than AF_INET or AF_INET6.
std::optional<Peer> PeerFromSockaddr(const sockaddr* sa, socklen_t len);

// The address to connect to; its length.
socklen_t PeerToSockaddr(const Peer& peer, sockaddr_storage& out);

}  // namespace skillmcp::egress
