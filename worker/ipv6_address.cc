#include "worker/ipv6_address.h"

#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "shared/unique_fd.h"

namespace skillmcp::worker {
namespace {

// why a bound: a kernel that never inserted the route would otherwise hold the worker; the
// caller then goes without the address (and the tun route).
constexpr int kLocalRouteWaitMs = 1000;
constexpr uint32_t kSequence = 1;

int64_t NowMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// Appends attribute `type`, `len` bytes of `data`, to `header`'s message, whose buffer has
// room for it.
void AddAttribute(nlmsghdr* header, uint16_t type, const void* data, size_t len) {
  auto* attribute =
      reinterpret_cast<rtattr*>(reinterpret_cast<char*>(header) + NLMSG_ALIGN(header->nlmsg_len));
  attribute->rta_type = type;
  attribute->rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
  std::memcpy(RTA_DATA(attribute), data, len);
  header->nlmsg_len = NLMSG_ALIGN(header->nlmsg_len) + RTA_ALIGN(attribute->rta_len);
}

// Whether `header` announces the local route of `address`: the one the kernel delivers
// packets to the address by.
bool IsLocalRouteOf(nlmsghdr* header, const in6_addr& address) {
  if (header->nlmsg_type != RTM_NEWROUTE || header->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg)))
    return false;
  auto* route = static_cast<rtmsg*>(NLMSG_DATA(header));
  if (route->rtm_family != AF_INET6 || route->rtm_type != RTN_LOCAL || route->rtm_dst_len != 128)
    return false;
  int len = static_cast<int>(RTM_PAYLOAD(header));
  for (rtattr* a = RTM_RTA(route); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) == sizeof address &&
        std::memcmp(RTA_DATA(a), &address, sizeof address) == 0)
      return true;
  }
  return false;
}

}  // namespace

int AddIpv6AddressNow(int ifindex, const in6_addr& address, uint8_t prefix_len) {
  UniqueFd nl(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!nl.valid()) return errno;
  // why subscribed before the request: the local route's announcement cannot then come
  // before the socket listens for it, whenever the kernel inserts the route.
  sockaddr_nl self{};
  self.nl_family = AF_NETLINK;
  self.nl_groups = RTMGRP_IPV6_ROUTE;
  if (bind(nl.get(), reinterpret_cast<sockaddr*>(&self), sizeof self) != 0) return errno;

  struct {
    nlmsghdr header;
    ifaddrmsg message;
    unsigned char attributes[2 * RTA_SPACE(sizeof(in6_addr))];
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof request.message);
  request.header.nlmsg_type = RTM_NEWADDR;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
  request.header.nlmsg_seq = kSequence;
  request.message.ifa_family = AF_INET6;
  request.message.ifa_prefixlen = prefix_len;
  request.message.ifa_scope = RT_SCOPE_UNIVERSE;
  request.message.ifa_index = static_cast<uint32_t>(ifindex);
  AddAttribute(&request.header, IFA_ADDRESS, &address, sizeof address);
  // In IFA_FLAGS, which the kernel reads over ifaddrmsg's 8-bit ifa_flags.
  const uint32_t flags = IFA_F_NODAD;
  AddAttribute(&request.header, IFA_FLAGS, &flags, sizeof flags);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  const ssize_t sent = sendto(nl.get(), &request, request.header.nlmsg_len, 0,
                              reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  if (sent != static_cast<ssize_t>(request.header.nlmsg_len)) return sent < 0 ? errno : EIO;

  bool acknowledged = false;
  bool routed = false;
  const int64_t deadline = NowMs() + kLocalRouteWaitMs;
  while (!acknowledged || !routed) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) return ETIMEDOUT;
    pollfd p{nl.get(), POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return errno;
    if (ready == 0) return ETIMEDOUT;
    alignas(nlmsghdr) char buffer[8192];
    sockaddr_nl from{};
    socklen_t from_len = sizeof from;
    const ssize_t got = recvfrom(nl.get(), buffer, sizeof buffer, MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) return errno;       // ENOBUFS: an announcement was lost, perhaps the route's
    if (from.nl_pid != 0) continue;  // why: only the kernel (port 0) answers for the kernel
    int len = static_cast<int>(got);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == kSequence) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return EPROTO;
        const int error = static_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
        if (error != 0) return -error;
        acknowledged = true;
      } else if (IsLocalRouteOf(h, address)) {
        routed = true;
      }
    }
  }
  return 0;
}

}  // namespace skillmcp::worker
