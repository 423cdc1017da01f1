#include "broker/cli/connect.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "shared/unique_fd.h"

namespace skillmcp {
namespace {

// Copies what is readable on `from` to `to`. False at EOF or on an error.
bool Pump(int from, int to) {
  char buf[65536];
  ssize_t n = read(from, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = write(to, buf + off, static_cast<size_t>(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += w;
  }
  return true;
}

}  // namespace

int RunConnect(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    fprintf(stderr, "skill-mcp connect: socket path is too long (%zu bytes, at most %zu)\n",
            socket_path.size(), sizeof addr.sun_path - 1);
    return 2;
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock || connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    fprintf(stderr,
            "skill-mcp connect: cannot connect to %s: %s\n"
            "  Is the service up (systemctl status skill-mcp.socket)? Is your user in the "
            "group allowed to use it (see skill-mcp(1), SYSTEMD SERVICE)?\n",
            socket_path.c_str(), strerror(err));
    return 1;
  }
  bool stdin_open = true;
  while (true) {
    pollfd fds[2];
    nfds_t count = 0;
    if (stdin_open) fds[count++] = {STDIN_FILENO, POLLIN, 0};
    const nfds_t sock_index = count;
    fds[count++] = {sock.get(), POLLIN, 0};
    if (poll(fds, count, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (stdin_open && fds[0].revents != 0 && !Pump(STDIN_FILENO, sock.get())) {
      // The client closed its side: pass the EOF on so the broker exits cleanly, and keep
      // relaying its last answers until it closes.
      shutdown(sock.get(), SHUT_WR);
      stdin_open = false;
    }
    if (fds[sock_index].revents != 0 && !Pump(sock.get(), STDOUT_FILENO)) return 0;
  }
}

}  // namespace skillmcp
