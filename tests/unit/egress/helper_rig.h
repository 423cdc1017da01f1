// The built skill-mcp-egress, started the two ways a deployment starts it: by a broker
// on one end of a socketpair (--connection-fd), or with a listening socket as systemd
// passes it (LISTEN_PID, LISTEN_FDS, fd 3). The test plays the broker through the
// protocol's own functions (shared/egress_wire.h, shared/fd_packet.h), and plays the
// hosts with TCP sockets on 127.0.0.1.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/egress_wire.h"
#include "shared/fd_packet.h"
#include "shared/unique_fd.h"

namespace skillmcp::egress_test {

inline int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

inline bool WaitReadable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

// What came back for one request.
struct Got {
  FdPacket::Status status = FdPacket::Status::kError;
  std::optional<EgressAnswer> answer;  // nothing when the message was not an answer
  UniqueFd fd;
  bool timed_out = false;
};

// The broker's end of one connection to a helper.
class BrokerEnd {
 public:
  explicit BrokerEnd(UniqueFd fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }
  void Close() { fd_.reset(); }

  int SendRaw(std::string_view bytes, int fd = -1) { return SendFdPacket(fd_.get(), bytes, fd); }
  void Ask(const EgressRequest& request) {
    std::optional<std::string> bytes = EncodeEgressRequest(request);
    ASSERT_TRUE(bytes.has_value()) << request.host;
    ASSERT_EQ(SendRaw(*bytes), 0);
  }
  // The next message, waiting at most `timeout_ms` for it.
  Got Receive(int timeout_ms = 10000) {
    Got got;
    if (!WaitReadable(fd_.get(), timeout_ms)) {
      got.timed_out = true;
      return got;
    }
    char buf[kEgressAnswerBytes + 1];
    FdPacket p = ReceiveFdPacket(fd_.get(), buf, sizeof buf);
    got.status = p.status;
    if (p.status == FdPacket::Status::kMessage) {
      got.answer = TakeEgressAnswer({buf, p.size}, p.fd);
      got.fd = std::move(p.fd);
    }
    return got;
  }

 private:
  UniqueFd fd_;
};

// One helper process; killed and reaped at the end if it is still there.
class Helper {
 public:
  // --connection-fd on a fresh socketpair; `args` added after it; `leak` (when not -1)
  // inherited at fd 11 as a careless parent would leave it.
  static std::unique_ptr<Helper> Connected(std::vector<std::string> args = {}, int leak = -1) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd ours(sv[0]), theirs(sv[1]);
    args.insert(args.begin(), {"--connection-fd", "10"});
    auto h = std::unique_ptr<Helper>(new Helper);
    h->pid_ = Spawn(args, theirs.get(), 10, /*listen=*/false, false, leak);
    h->broker_.emplace(std::move(ours));
    return h;
  }
  // A listening SOCK_SEQPACKET socket at `path`, passed as socket activation passes it.
  static std::unique_ptr<Helper> Activated(const std::string& path,
                                           std::vector<std::string> args = {}) {
    UniqueFd listener(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un sa = Address(path);
    EXPECT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(listen(listener.get(), 16), 0);
    auto h = std::unique_ptr<Helper>(new Helper);
    h->pid_ = Spawn(args, listener.get(), 3, /*listen=*/true);
    h->path_ = path;
    return h;
  }
  // Any argv, with `fd` at 10, or at 3 with the activation variables (LISTEN_PID naming
  // another process when `wrong_pid`), for the refusals at start.
  static pid_t SpawnRaw(const std::vector<std::string>& args, int fd, bool listen,
                        bool wrong_pid = false) {
    return Spawn(args, fd, listen ? 3 : 10, listen, wrong_pid);
  }

  ~Helper() {
    broker_.reset();
    if (pid_ > 0 && WaitExit(100) == -1) {
      kill(pid_, SIGKILL);
      WaitExit(5000);
    }
    if (!path_.empty()) unlink(path_.c_str());
  }

  BrokerEnd& broker() { return *broker_; }
  pid_t pid() const { return pid_; }
  // A new connection to an activated helper.
  BrokerEnd Connect() {
    UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un sa = Address(path_);
    EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    return BrokerEnd(std::move(fd));
  }
  void CloseBroker() { broker_.reset(); }

  // The wait status once the helper has exited, or -1 when it is still running after
  // `timeout_ms`.
  int WaitExit(int timeout_ms) { return WaitPid(pid_, timeout_ms); }

  static int WaitPid(pid_t& pid, int timeout_ms) {
    const int64_t end = NowMs() + timeout_ms;
    for (;;) {
      int status = 0;
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        pid = -1;
        return status;
      }
      if (r < 0 || NowMs() >= end) return -1;
      usleep(10000);
    }
  }

 private:
  Helper() = default;

  static sockaddr_un Address(const std::string& path) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    return sa;
  }

  static pid_t Spawn(const std::vector<std::string>& args, int fd, int at, bool listen,
                     bool wrong_pid = false, int leak = -1) {
    std::vector<std::string> argv_s = {SKILL_MCP_TEST_EGRESS};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      // dup2 leaves the copy open across exec; the same number keeps its close-on-exec.
      if (fd == at ? fcntl(fd, F_SETFD, 0) != 0 : dup2(fd, at) != at) _exit(120);
      if (leak >= 0 && dup2(leak, 11) != 11) _exit(120);
      char listen_pid[32], *envp[] = {listen_pid, const_cast<char*>("LISTEN_FDS=1"), nullptr};
      snprintf(listen_pid, sizeof listen_pid, "LISTEN_PID=%d",
               static_cast<int>(wrong_pid ? getppid() : getpid()));
      char* no_env[] = {nullptr};
      execve(argv[0], argv.data(), listen ? envp : no_env);
      _exit(121);
    }
    EXPECT_GT(pid, 0);
    return pid;
  }

  pid_t pid_ = -1;
  std::optional<BrokerEnd> broker_;
  std::string path_;
};

// A TCP socket on 127.0.0.1 (or `address`) with a port of its own (or `port`): listening
// (a host that answers), or only bound (a port nothing listens on, so that no other test
// takes it meanwhile).
struct LocalPort {
  UniqueFd fd;
  uint16_t port = 0;

  static LocalPort Open(bool listening, int backlog = 16, const char* address = "127.0.0.1",
                        uint16_t port = 0) {
    LocalPort p;
    p.fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    EXPECT_EQ(inet_pton(AF_INET, address, &sa.sin_addr), 1) << address;
    EXPECT_EQ(bind(p.fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << address;
    if (listening) {
      EXPECT_EQ(listen(p.fd.get(), backlog), 0);
    }
    socklen_t len = sizeof sa;
    EXPECT_EQ(getsockname(p.fd.get(), reinterpret_cast<sockaddr*>(&sa), &len), 0);
    p.port = ntohs(sa.sin_port);
    return p;
  }

  UniqueFd Accept(int timeout_ms = 5000) {
    if (!WaitReadable(fd.get(), timeout_ms)) return UniqueFd();
    return UniqueFd(accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
};

inline EgressRequest To(uint32_t id, std::string host, uint16_t port, bool allow_local) {
  EgressRequest r;
  r.id = id;
  r.host = std::move(host);
  r.port = port;
  r.allow_local = allow_local;
  return r;
}

inline std::string AddressText(const EgressAnswer& a) {
  char out[INET6_ADDRSTRLEN] = "";
  if (a.family != 0) inet_ntop(a.family, a.address.data(), out, sizeof out);
  return out;
}

}  // namespace skillmcp::egress_test
