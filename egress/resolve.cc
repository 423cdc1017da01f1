#include "egress/resolve.h"

#include <netdb.h>

#include <memory>

namespace skillmcp::egress {
namespace {

Resolution Lookup(const std::string& host, uint16_t port, int flags) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) return {ResolverErrno(rc), {}};
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(list, &freeaddrinfo);
  Resolution result;
  for (const addrinfo* a = list; a != nullptr && result.peers.size() < kMaxAddresses;
       a = a->ai_next) {
    if (std::optional<Peer> peer = PeerFromSockaddr(a->ai_addr, a->ai_addrlen))
      result.peers.push_back(*peer);
  }
  if (result.peers.empty()) result.error = ENOENT;
  return result;
}

}  // namespace

int ResolverErrno(int gai_error) {
  switch (gai_error) {
    case 0:
      return 0;
    // The name exists nowhere, or has no address of a family this host can reach.
    case EAI_NONAME:
    case EAI_NODATA:
    case EAI_ADDRFAMILY:
    case EAI_FAMILY:
      return ENOENT;
    // The resolver could not say: no name server answered, or one failed (EAI_AGAIN,
    // EAI_FAIL), or something under it did (EAI_SYSTEM, EAI_MEMORY).
    default:
      return EIO;
  }
}

Resolution ResolveLiteral(const std::string& host, uint16_t port) {
  return Lookup(host, port, AI_NUMERICHOST);
}

std::string QueryName(const std::string& host) {
  if (!host.empty() && host.back() == '.') return host;
  return host + ".";
}

Resolution ResolveName(const std::string& host, uint16_t port) {
  return Lookup(QueryName(host), port, AI_ADDRCONFIG);
}

}  // namespace skillmcp::egress
