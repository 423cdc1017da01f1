// The socket family allowlist (@socket-families, every run) on the real kernel: a forked
// child installs the compiled policy and makes each socket itself. Only unix, IPv4, IPv6
// and netlink sockets open; every other family, and any domain with junk in its high half,
// is EPERM before the kernel sees it (so no module is loaded for it either).
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "seccomp/policy.h"
#include "tests/unit/seccomp/socket_calls.h"

namespace skillmcp::seccomp {
namespace {

constexpr long kHighJunk = 1L << 32;

// Families that reach past the network fences or into surface no script needs, with a
// type each family's kernel code would accept; and domains no family has.
constexpr SocketCall kRefused[] = {
    {"smc", SYS_socket, 43 /*AF_SMC*/, SOCK_STREAM, 0},  // falls back to plain TCP
    {"vsock", SYS_socket, AF_VSOCK, SOCK_STREAM, 0},     // the hypervisor host
    {"packet", SYS_socket, AF_PACKET, SOCK_RAW, 0},
    {"bluetooth", SYS_socket, AF_BLUETOOTH, SOCK_SEQPACKET, 0},
    {"alg", SYS_socket, AF_ALG, SOCK_SEQPACKET, 0},
    {"key", SYS_socket, AF_KEY, SOCK_RAW, 2 /*PF_KEY_V2*/},
    {"unspec", SYS_socket, AF_UNSPEC, SOCK_STREAM, 0},
    {"domain_1000", SYS_socket, 1000, SOCK_STREAM, 0},
    {"unix_high", SYS_socket, kHighJunk | AF_UNIX, SOCK_STREAM, 0},
    {"inet_high", SYS_socket, kHighJunk | AF_INET, SOCK_STREAM, 0},
    {"inet6_high", SYS_socket, kHighJunk | AF_INET6, SOCK_DGRAM, 0},
    {"netlink_high", SYS_socket, kHighJunk | AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
    {"inet_all_high", SYS_socket, static_cast<long>(0xffffffff00000000UL | AF_INET), SOCK_STREAM,
     0},
    {"pair_tipc", SYS_socketpair, AF_TIPC, SOCK_SEQPACKET, 0},
    {"pair_vsock", SYS_socketpair, AF_VSOCK, SOCK_STREAM, 0},
    {"pair_unix_high", SYS_socketpair, kHighJunk | AF_UNIX, SOCK_STREAM, 0},
};

// The positive controls, made in the same child: what node and python make.
constexpr SocketCall kAllowed[] = {
    {"unix_stream", SYS_socket, AF_UNIX, SOCK_STREAM, 0},
    {"inet_stream", SYS_socket, AF_INET, SOCK_STREAM, 0},
    {"inet6_dgram", SYS_socket, AF_INET6, SOCK_DGRAM, 0},
    {"netlink_route", SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE},
    {"pair_unix_stream", SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0},
    {"pair_unix_dgram", SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0},
};

std::vector<SocketCall> Both() {
  std::vector<SocketCall> calls(std::begin(kRefused), std::end(kRefused));
  calls.insert(calls.end(), std::begin(kAllowed), std::end(kAllowed));
  return calls;
}

TEST(SocketFamilies, OtherFamiliesAreRefusedAndTheFourOpen) {
  const auto seen = SocketsUnder(DoorFence::kNone, /*inet_fence=*/false, Both());
  ASSERT_EQ(seen.count("child"), 0u) << seen.at("child");
  for (const SocketCall& c : kRefused) EXPECT_EQ(seen.at(c.name), "EPERM") << c.name;
  for (const SocketCall& c : kAllowed) EXPECT_EQ(seen.at(c.name), "ok") << c.name;
}

// Every domain up to well past the kernel's AF_MAX, and the edges of a 64-bit argument:
// refused unless it is exactly an allowed family, which gets the kernel's own answer (the
// same call made here, unfiltered: socketpair of an IP or netlink family is EOPNOTSUPP).
// Pins the compiled gaps between the allowed values, not only the named families above.
TEST(SocketFamilies, EveryDomainOutsideTheListIsRefusedOnBothCalls) {
  const std::set<long> allowed = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  std::vector<long> domains;
  for (long d = 0; d < 64; ++d) domains.push_back(d);
  for (unsigned long d : {1000UL, 0x7fffffffUL, 0x80000000UL, 0xffffffffUL, 1UL << 32,
                          (1UL << 32) + 17, 1UL << 63, ~0UL})
    domains.push_back(static_cast<long>(d));
  std::vector<std::string> names;  // SocketCall holds a const char*
  for (long d : domains)
    for (const char* call : {"socket", "pair"})
      names.push_back(std::string(call) + "_" + std::to_string(static_cast<unsigned long>(d)));
  std::vector<SocketCall> calls;
  for (size_t i = 0; i < domains.size(); ++i) {
    calls.push_back({names[2 * i].c_str(), SYS_socket, domains[i], SOCK_STREAM | SOCK_CLOEXEC, 0});
    calls.push_back({names[2 * i + 1].c_str(), SYS_socketpair, domains[i], SOCK_STREAM, 0});
  }
  const auto seen = SocketsUnder(DoorFence::kNone, /*inet_fence=*/false, calls);
  ASSERT_EQ(seen.count("child"), 0u) << seen.at("child");
  for (const SocketCall& c : calls) {
    if (allowed.count(c.domain)) {
      EXPECT_EQ(seen.at(c.name), Answer(c)) << c.name << ": not the kernel's own answer";
    } else {
      EXPECT_EQ(seen.at(c.name), "EPERM") << c.name;
    }
  }
}

// The allowlist holds beside every door fence and the inet fence (libseccomp merges their
// socket rules into one tree); netlink, which no fence takes, stays open in each.
TEST(SocketFamilies, HoldUnderEveryFence) {
  for (DoorFence fence : {DoorFence::kNone, DoorFence::kUnixSockets, DoorFence::kNoView})
    for (bool inet_fence : {false, true}) {
      const auto seen = SocketsUnder(fence, inet_fence, Both());
      ASSERT_EQ(seen.count("child"), 0u) << seen.at("child");
      const std::string variant = "fence " + std::to_string(static_cast<int>(fence)) + " inet " +
                                  std::to_string(inet_fence);
      for (const SocketCall& c : kRefused) EXPECT_EQ(seen.at(c.name), "EPERM") << c.name << variant;
      EXPECT_EQ(seen.at("netlink_route"), "ok") << variant;
      EXPECT_EQ(seen.at("pair_unix_stream"), "ok") << variant;
    }
}

}  // namespace
}  // namespace skillmcp::seccomp
