#include "egress/activation.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

namespace skillmcp::egress {
namespace {

constexpr int kListenFdsStart = 3;  // SD_LISTEN_FDS_START

bool SocketOption(int fd, int option, int& value) {
  socklen_t len = sizeof value;
  return getsockopt(fd, SOL_SOCKET, option, &value, &len) == 0;
}

// why: one message per request and per answer is what keeps a request from being read
// half, or two as one; a stream socket (or a file) in its place is a misconfiguration.
bool CheckSeqpacket(int fd, bool listening, std::string* error) {
  int domain = 0, type = 0, accepting = 0;
  if (!SocketOption(fd, SO_DOMAIN, domain) || !SocketOption(fd, SO_TYPE, type) ||
      !SocketOption(fd, SO_ACCEPTCONN, accepting)) {
    *error = "descriptor " + std::to_string(fd) + " is not a socket: " + strerror(errno);
    return false;
  }
  if (domain != AF_UNIX || type != SOCK_SEQPACKET || (accepting != 0) != listening) {
    *error = "descriptor " + std::to_string(fd) + " is not a " +
             (listening ? "listening" : "connected") + " unix SOCK_SEQPACKET socket";
    return false;
  }
  return true;
}

std::optional<long> EnvNumber(const char* name) {
  const char* text = getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  long value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return -1;
  return value;
}

}  // namespace

int TakeActivationSocket(std::string* error) {
  error->clear();
  const std::optional<long> pid = EnvNumber("LISTEN_PID");
  const std::optional<long> fds = EnvNumber("LISTEN_FDS");
  if (!pid && !fds) return -1;
  // The variables are inherited by anything a service starts: only the process they
  // name may take the descriptors.
  if (!pid || *pid != getpid()) {
    *error = "LISTEN_PID does not name this process";
    return -1;
  }
  if (!fds || *fds != 1) {
    *error = "LISTEN_FDS is not 1: the unit must pass exactly one listening socket";
    return -1;
  }
  if (!CheckSeqpacket(kListenFdsStart, /*listening=*/true, error)) return -1;
  return kListenFdsStart;
}

bool CheckConnectionSocket(int fd, std::string* error) {
  return CheckSeqpacket(fd, /*listening=*/false, error);
}

}  // namespace skillmcp::egress
