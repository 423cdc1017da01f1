// The network fence on the real kernel: a forked child installs the compiled policy and
// makes each socket itself, reporting the errno. Every row's control is the same call in
// a child whose policy lacks the fence, so an EPERM seen with it is the filter's.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "seccomp/policy.h"
#include "tests/unit/seccomp/socket_calls.h"

namespace skillmcp::seccomp {
namespace {

// A domain with junk in its high half is refused by the base policy (@socket-families,
// socket_families_test.cc), fence or not, so no row here carries any.
constexpr SocketCall kInetCalls[] = {
    {"inet_stream", SYS_socket, AF_INET, SOCK_STREAM, 0},
    {"inet6_dgram", SYS_socket, AF_INET6, SOCK_DGRAM, 0},
    {"inet_raw", SYS_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP},
    {"inet6_stream_nonblock", SYS_socket, AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0},
    {"inet_icmp_dgram", SYS_socket, AF_INET, SOCK_DGRAM, IPPROTO_ICMP},
};

constexpr SocketCall kUnixStream = {"unix_stream", SYS_socket, AF_UNIX, SOCK_STREAM, 0};

// The IP calls and kUnixStream under the policy (fence, inet_fence).
std::map<std::string, std::string> InetSocketsUnder(DoorFence fence, bool inet_fence) {
  std::vector<SocketCall> calls(std::begin(kInetCalls), std::end(kInetCalls));
  calls.push_back(kUnixStream);
  return seccomp::SocketsUnder(fence, inet_fence, calls);
}

TEST(InetFence, EveryIpSocketIsRefusedAndUnixSocketsStayOpen) {
  const auto fenced = InetSocketsUnder(DoorFence::kNone, /*inet_fence=*/true);
  ASSERT_EQ(fenced.count("child"), 0u) << fenced.at("child");
  for (const SocketCall& c : kInetCalls) EXPECT_EQ(fenced.at(c.name), "EPERM") << c.name;
  EXPECT_EQ(fenced.at(kUnixStream.name), "ok") << "the inet fence refuses unix sockets too";
}

// Without the fence the same policy lets each IP socket through to the kernel, whose own
// answer is never EPERM but for a raw socket without CAP_NET_RAW (an ICMP datagram socket
// outside ping_group_range gets EACCES).
TEST(InetFence, WithoutItIpSocketsOpenUnderTheSamePolicy) {
  const auto open = InetSocketsUnder(DoorFence::kNone, /*inet_fence=*/false);
  ASSERT_EQ(open.count("child"), 0u) << open.at("child");
  for (const SocketCall& c : kInetCalls) {
    if (c.type == SOCK_RAW && geteuid() != 0) {
      std::printf(
          "note: without CAP_NET_RAW the kernel itself refuses %s; only a root run "
          "tells the filter's EPERM from the kernel's\n",
          c.name);
      continue;
    }
    EXPECT_NE(open.at(c.name), "EPERM") << c.name;
  }
  for (const char* name : {"inet_stream", "inet6_dgram"}) EXPECT_EQ(open.at(name), "ok") << name;
  EXPECT_EQ(open.at(kUnixStream.name), "ok");
}

// The fences stack: with a door fence as well, both families are refused.
TEST(InetFence, StacksOnEachDoorFence) {
  for (DoorFence fence : {DoorFence::kUnixSockets, DoorFence::kNoView}) {
    const auto both = InetSocketsUnder(fence, /*inet_fence=*/true);
    ASSERT_EQ(both.count("child"), 0u) << both.at("child");
    for (const SocketCall& c : kInetCalls) EXPECT_EQ(both.at(c.name), "EPERM") << c.name;
    EXPECT_EQ(both.at(kUnixStream.name), "EPERM");
    const auto door_only = InetSocketsUnder(fence, /*inet_fence=*/false);
    ASSERT_EQ(door_only.count("child"), 0u) << door_only.at("child");
    EXPECT_EQ(door_only.at("inet_stream"), "ok") << "a door fence alone refuses IP sockets";
  }
}

}  // namespace
}  // namespace skillmcp::seccomp
