// The mirror's own filter on the real kernel, loaded by the worker's own step
// (LoadMirrorFilter) from the program the broker compiles. A forked child stands for the
// mirror: before the load it holds what the mirror holds (a listener with a client queued,
// a connected TCP socket standing for the helper's, the resolver's UDP socket with a query
// waiting, the egress channel with a descriptor waiting on it, unconnected TCP sockets).
// It makes the same calls once on a set of those made for the control, then loads the
// filter and makes them again on a second set: every way to a new or readdressed network
// endpoint succeeds before and is EPERM after (the control shows the calls were real),
// and every call the mirror's relay makes works before and after.
#include "worker/mirror_seccomp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "shared/fd_packet.h"
#include "tests/unit/worker/test_util.h"

namespace skillmcp::testing {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(port);
  return at;
}

sockaddr* Sa(sockaddr_in& at) { return reinterpret_cast<sockaddr*>(&at); }

uint16_t PortOf(int fd) {
  sockaddr_in at{};
  socklen_t len = sizeof at;
  getsockname(fd, Sa(at), &len);
  return ntohs(at.sin_port);
}

int Listener() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at = Loopback(0);
  if (bind(fd, Sa(at), sizeof at) != 0 || listen(fd, 8) != 0) _exit(80);
  return fd;
}

int ConnectedTo(int listener) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at = Loopback(PortOf(listener));
  if (connect(fd, Sa(at), sizeof at) != 0) _exit(81);
  return fd;
}

// What the mirror holds when it loads its filter, all made before it.
struct Held {
  int far = -1;       // a server of the helper's network
  int helper = -1;    // connected to `far`: the socket the broker sends
  int listener = -1;  // one of the run's listeners, with `client` queued on it
  int client = -1;    // the script's connection, its request written
  int resolver = -1;  // the run's resolver, a query waiting
  int query = -1;
  int channel = -1;  // the mirror's end of the egress channel, a descriptor waiting
  int broker = -1;
  int fresh[3] = {-1, -1, -1};  // unconnected TCP sockets
  Held() {
    far = Listener();
    helper = ConnectedTo(far);
    listener = Listener();
    client = ConnectedTo(listener);
    if (write(client, "GET", 3) != 3) _exit(82);
    resolver = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in at = Loopback(0);
    if (bind(resolver, Sa(at), sizeof at) != 0) _exit(83);
    query = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    at = Loopback(PortOf(resolver));
    if (sendto(query, "q", 1, 0, Sa(at), sizeof at) != 1) _exit(84);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) _exit(85);
    channel = pair[0];
    broker = pair[1];
    if (SendFdPacket(broker, "opened", helper) != 0) _exit(86);
    for (int& f : fresh) f = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }
};

std::string Of(long rc) { return rc >= 0 ? "ok" : strerrorname_np(errno); }

// Each call on `h`, as "name answer" lines.
std::string Calls(Held& h) {
  std::string out;
  auto note = [&](const char* name, long rc) { out += std::string(name) + " " + Of(rc) + "\n"; };
  sockaddr_in far = Loopback(PortOf(h.far));
  // Ways to a new or readdressed endpoint.
  note("socket_inet", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  note("socket_unix", socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int pair[2];
  note("socketpair", socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair));
  // connect(AF_UNSPEC) dissolves the helper's connection: what the filter is for.
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  note("dissolve_helper", connect(h.helper, &unspec, sizeof unspec));
  note("connect", connect(h.fresh[0], Sa(far), sizeof far));
  sockaddr_in any = Loopback(0);
  note("bind", bind(h.fresh[1], Sa(any), sizeof any));
  note("listen", listen(h.fresh[1], 1));
  note("sendto_fastopen", sendto(h.fresh[2], "x", 1, MSG_FASTOPEN, Sa(far), sizeof far));
  iovec iov{const_cast<char*>("m"), 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  note("sendmsg", sendmsg(h.channel, &msg, MSG_DONTWAIT));
  mmsghdr mm{};
  mm.msg_hdr = msg;
  note("sendmmsg", sendmmsg(h.channel, &mm, 1, MSG_DONTWAIT));
  io_uring_params params{};
  note("io_uring_setup", syscall(SYS_io_uring_setup, 1, &params));
  // What the relay makes (worker/egress_relay.cc, worker/cell.cc).
  const int client = accept4(h.listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  note("accept4", client);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  note("getsockname", getsockname(client, Sa(local), &len));
  char buf[64];
  sockaddr_in from{};
  len = sizeof from;
  note("recvfrom", recvfrom(h.resolver, buf, sizeof buf, MSG_DONTWAIT, Sa(from), &len));
  note("sendto", sendto(h.resolver, "a", 1, MSG_DONTWAIT, Sa(from), len));
  note("send", send(h.channel, "connect", 7, MSG_DONTWAIT | MSG_NOSIGNAL));
  const FdPacket got = ReceiveFdPacket(h.channel, buf, sizeof buf);  // recvmsg
  note("recvmsg_fd", got.status == FdPacket::Status::kMessage && got.fd.valid() ? 0 : -1);
  int p[2];
  note("pipe2", pipe2(p, O_NONBLOCK | O_CLOEXEC));
  note("pipe_size", fcntl(p[1], F_SETPIPE_SZ, 1 << 16));
  note("splice_in", splice(client, nullptr, p[1], nullptr, 64, SPLICE_F_NONBLOCK));
  note("fcntl", fcntl(h.helper, F_SETFL, fcntl(h.helper, F_GETFL) | O_NONBLOCK));
  linger l{1, 0};
  note("setsockopt_linger", setsockopt(client, SOL_SOCKET, SO_LINGER, &l, sizeof l));
  pollfd pf{h.resolver, POLLIN, 0};
  note("poll", poll(&pf, 1, 0));
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  note("signalfd", signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  note("shutdown", shutdown(client, SHUT_WR));
  return out;
}

// Runs `Calls` in a forked child on a first set of what the mirror holds, then loads the
// mirror's filter and runs them on a second set: name -> {before, after}, and "child" ->
// its status where it failed.
std::map<std::string, std::pair<std::string, std::string>> BeforeAndAfter() {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return {{"child", {"no pipe", ""}}};
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(90);
    Held control, mirror;
    std::string out = Calls(control);
    if (worker::LoadMirrorFilter(CompiledMirrorPolicy())) _exit(91);
    std::string after = Calls(mirror);
    for (size_t at = 0; (at = after.find('\n', at)) != std::string::npos; ++at)
      after.insert(at, " after"), at += 6;
    out += after;
    const ssize_t n = write(pipefd[1], out.data(), out.size());
    _exit(n == static_cast<ssize_t>(out.size()) ? 0 : 92);
  }
  close(pipefd[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  std::map<std::string, std::pair<std::string, std::string>> seen;
  for (const std::string& line : Lines(text)) {
    const size_t space = line.find(' ');
    const std::string answer = line.substr(space + 1);
    auto& slot = seen[line.substr(0, space)];
    if (answer.ends_with(" after"))
      slot.second = answer.substr(0, answer.size() - 6);
    else
      slot.first = answer;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    seen["child"] = {"status " + std::to_string(status), ""};
  return seen;
}

TEST(MirrorSeccomp, NoNewOrReaddressedEndpointOnceLoadedAndTheRelayStillWorks) {
  const auto seen = BeforeAndAfter();
  ASSERT_EQ(seen.count("child"), 0u) << seen.at("child").first;
  for (const char* name :
       {"dissolve_helper", "socket_inet", "socket_unix", "socketpair", "connect", "bind", "listen",
        "sendto_fastopen", "sendmsg", "sendmmsg", "io_uring_setup"}) {
    ASSERT_EQ(seen.count(name), 1u) << name;
    const auto& [before, after] = seen.at(name);
    EXPECT_EQ(after, "EPERM") << name << " is open to the mirror";
    // The control: the same call on the same kind of socket reached the kernel. A
    // non-blocking fast open may still be in progress; io_uring may be off by sysctl.
    if (std::string_view(name) == "io_uring_setup" && before == "EPERM") {
      std::printf("note: io_uring is off on this host (kernel.io_uring_disabled)\n");
      continue;
    }
    EXPECT_NE(before, "EPERM") << name << " was refused without the filter";
    if (std::string_view(name) != "sendto_fastopen") {
      EXPECT_EQ(before, "ok") << name;
    }
  }
  for (const char* name :
       {"accept4", "getsockname", "recvfrom", "sendto", "send", "recvmsg_fd", "pipe2", "pipe_size",
        "splice_in", "fcntl", "setsockopt_linger", "poll", "signalfd", "shutdown"}) {
    ASSERT_EQ(seen.count(name), 1u) << name;
    EXPECT_EQ(seen.at(name).first, "ok") << name << " without the filter";
    EXPECT_EQ(seen.at(name).second, "ok") << name << " is refused to the mirror's relay";
  }
}

}  // namespace
}  // namespace skillmcp::testing
