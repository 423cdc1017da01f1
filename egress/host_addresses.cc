#include "egress/host_addresses.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>

#include "egress/peer.h"
#include "shared/log.h"

namespace skillmcp::egress {

std::optional<HostAddresses> ReadHostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  HostAddresses out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const socklen_t len =
        i->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (std::optional<Peer> p = PeerFromSockaddr(i->ifa_addr, len))
      out.insert(IpAddress{p->family, p->address});
  }
  freeifaddrs(list);
  return out;
}

std::shared_ptr<const HostAddresses> HostAddressCache::Get(int64_t now_ms) {
  if (read_at_ms_ && now_ms - *read_at_ms_ < kHostAddressesRefreshMs) return current_;
  read_at_ms_ = now_ms;
  std::optional<HostAddresses> read = reader_();
  if (!read) {
    // why null, not the last reading: an address added since then would pass as global.
    LOG_WARN_ERRNO(
        "egress: cannot read the host's own addresses; every address refused unless local "
        "ones are allowed");
    current_.reset();
    return current_;
  }
  current_ = std::make_shared<const HostAddresses>(std::move(*read));
  return current_;
}

}  // namespace skillmcp::egress
