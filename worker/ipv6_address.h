// An IPv6 address for an interface of the worker's own network namespace, usable the
// moment this returns. Its own file because it speaks rtnetlink, where the rest of the
// cell uses ioctls: SIOCSIFADDR cannot skip duplicate address detection, so the kernel
// holds the address tentative until it finds the link ready (a second or more at times),
// and drops what is sent to it meanwhile: the mirror's refusal of a connect made then is
// lost, and the connect waits for the SYN's retransmit instead of failing at once.
#pragma once

#include <netinet/in.h>

#include <cstdint>

namespace skillmcp::worker {

// Adds `address`/`prefix_len` to interface `ifindex` without duplicate address detection
// (IFA_F_NODAD), over a NETLINK_ROUTE socket of its own; returns once the kernel has
// acknowledged it and its local route is in the table (the route a reply to the address
// is delivered by, which the kernel inserts a moment later): 0, or an errno (ETIMEDOUT
// when the local route does not come within a second).
int AddIpv6AddressNow(int ifindex, const in6_addr& address, uint8_t prefix_len);

}  // namespace skillmcp::worker
