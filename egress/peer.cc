#include "egress/peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace skillmcp::egress {

std::optional<Peer> PeerFromSockaddr(const sockaddr* sa, socklen_t len) {
  Peer peer;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    peer.family = AF_INET;
    std::memcpy(peer.address.data(), &in.sin_addr, 4);
    peer.port = ntohs(in.sin_port);
    return peer;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    peer.family = AF_INET6;
    std::memcpy(peer.address.data(), &in6.sin6_addr, 16);
    peer.port = ntohs(in6.sin6_port);
    return peer;
  }
  return std::nullopt;
}

socklen_t PeerToSockaddr(const Peer& peer, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  if (peer.family == AF_INET) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(peer.port);
    std::memcpy(&in.sin_addr, peer.address.data(), 4);
    std::memcpy(&out, &in, sizeof in);
    return sizeof in;
  }
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(peer.port);
  std::memcpy(&in6.sin6_addr, peer.address.data(), 16);
  std::memcpy(&out, &in6, sizeof in6);
  return sizeof in6;
}

}  // namespace skillmcp::egress
