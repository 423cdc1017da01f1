// Name resolution for one request: an IP literal at once, a name by getaddrinfo on a
// thread of its own (it blocks, for as long as the host's resolver takes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egress/peer.h"

namespace skillmcp::egress {

// At most this many addresses of one name are tried, in the resolver's order; a name
// with more than that is as reachable through its first ones.
inline constexpr size_t kMaxAddresses = 16;

struct Resolution {
  int error = 0;  // 0, ENOENT (no address), EIO (the resolver failed)
  std::vector<Peer> peers;
};

// The errno an answer carries for a getaddrinfo error (shared/egress_wire.h).
int ResolverErrno(int gai_error);

// Does not block: the address of an IP literal (IsAddressLiteral, shared/egress_allowlist.h).
Resolution ResolveLiteral(const std::string& host, uint16_t port);

// The name getaddrinfo is asked for: `host` made absolute (a trailing dot), so that the
// host's resolv.conf search list and ndots never turn a declared `vault` into
// `vault.svc.cluster.local`. A name the host's files source (/etc/hosts) alone knows is
// then not found: glibc's files source does not match an absolute name.
std::string QueryName(const std::string& host);

// Blocks: the name's IPv4 and IPv6 stream addresses (AI_ADDRCONFIG) with `port`, looked up
// as QueryName(host).
Resolution ResolveName(const std::string& host, uint16_t port);

}  // namespace skillmcp::egress
