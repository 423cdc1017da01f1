// The network fence on the real kernel: a forked child installs the compiled policy and
// makes each socket itself, reporting the errno. Every row's control is the same call in
// a child whose policy lacks the fence, so an EPERM seen with it is the filter's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "seccomp/compile.h"
#include "seccomp/policy.h"

namespace skillmcp::seccomp {
namespace {

struct SocketCall {
  const char* name;
  long domain;  // a long: the high half is junk the kernel drops from the int
  long type;
  long protocol;
};

constexpr SocketCall kInetCalls[] = {
    {"inet_stream", AF_INET, SOCK_STREAM, 0},
    {"inet6_dgram", AF_INET6, SOCK_DGRAM, 0},
    {"inet_raw", AF_INET, SOCK_RAW, IPPROTO_ICMP},
    {"inet6_stream_nonblock", AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0},
    {"inet_high", (1L << 32) | AF_INET, SOCK_STREAM, 0},
    {"inet_icmp_dgram", AF_INET, SOCK_DGRAM, IPPROTO_ICMP},
};

constexpr SocketCall kUnixStream = {"unix_stream", AF_UNIX, SOCK_STREAM, 0};

std::string Answer(const SocketCall& c) {
  const long fd = syscall(SYS_socket, c.domain, c.type, c.protocol);
  if (fd >= 0) {
    close(static_cast<int>(fd));
    return "ok";
  }
  return strerrorname_np(errno);
}

// Forks a child that installs the policy (fence, inet_fence) and makes every socket of
// kInetCalls and kUnixStream in turn; returns name -> "ok" or the errno's name.
std::map<std::string, std::string> SocketsUnder(DoorFence fence, bool inet_fence) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(90);
    if (InstallWorkerPolicy(fence, inet_fence) != 0) _exit(91);
    std::string out;
    for (const SocketCall& c : kInetCalls) out += std::string(c.name) + " " + Answer(c) + "\n";
    out += std::string(kUnixStream.name) + " " + Answer(kUnixStream) + "\n";
    const ssize_t n = write(pipefd[1], out.data(), out.size());
    _exit(n == static_cast<ssize_t>(out.size()) ? 0 : 92);
  }
  close(pipefd[1]);
  std::map<std::string, std::string> seen;
  if (FILE* lines = fdopen(pipefd[0], "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, lines) != nullptr) {
      std::string_view text(line);
      text.remove_suffix(text.ends_with('\n') ? 1 : 0);
      const size_t space = text.find(' ');
      seen[std::string(text.substr(0, space))] = std::string(text.substr(space + 1));
    }
    std::fclose(lines);
  } else {
    close(pipefd[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    seen["child"] = "status " + std::to_string(status);
  return seen;
}

TEST(InetFence, EveryIpSocketIsRefusedAndUnixSocketsStayOpen) {
  const auto fenced = SocketsUnder(DoorFence::kNone, /*inet_fence=*/true);
  ASSERT_EQ(fenced.count("child"), 0u) << fenced.at("child");
  for (const SocketCall& c : kInetCalls) EXPECT_EQ(fenced.at(c.name), "EPERM") << c.name;
  EXPECT_EQ(fenced.at(kUnixStream.name), "ok") << "the inet fence refuses unix sockets too";
}

// Without the fence the same policy lets each IP socket through to the kernel, whose own
// answer is never EPERM but for a raw socket without CAP_NET_RAW (an ICMP datagram socket
// outside ping_group_range gets EACCES).
TEST(InetFence, WithoutItIpSocketsOpenUnderTheSamePolicy) {
  const auto open = SocketsUnder(DoorFence::kNone, /*inet_fence=*/false);
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
  for (const char* name : {"inet_stream", "inet6_dgram", "inet_high"})
    EXPECT_EQ(open.at(name), "ok") << name;
  EXPECT_EQ(open.at(kUnixStream.name), "ok");
}

// The fences stack: with a door fence as well, both families are refused.
TEST(InetFence, StacksOnEachDoorFence) {
  for (DoorFence fence : {DoorFence::kUnixSockets, DoorFence::kNoView}) {
    const auto both = SocketsUnder(fence, /*inet_fence=*/true);
    ASSERT_EQ(both.count("child"), 0u) << both.at("child");
    for (const SocketCall& c : kInetCalls) EXPECT_EQ(both.at(c.name), "EPERM") << c.name;
    EXPECT_EQ(both.at(kUnixStream.name), "EPERM");
    const auto door_only = SocketsUnder(fence, /*inet_fence=*/false);
    ASSERT_EQ(door_only.count("child"), 0u) << door_only.at("child");
    EXPECT_EQ(door_only.at("inet_stream"), "ok") << "a door fence alone refuses IP sockets";
  }
}

}  // namespace
}  // namespace skillmcp::seccomp
