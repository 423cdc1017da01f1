#include "shared/fd_packet.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace skillmcp {
namespace {

// Room for more than the one descriptor allowed, so that a second is seen and closed.
constexpr size_t kFdRoom = 4;

// Closes every descriptor in the message's SCM_RIGHTS parts; how many there were, and
// whether anything else (other control data) came.
size_t CollectFds(msghdr& msg, int& first, bool& other) {
  size_t total = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
      other = true;
      continue;
    }
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (total == 0) {
        first = fd;
      } else {
        close(fd);
      }
      ++total;
    }
  }
  return total;
}

}  // namespace

FdPacket ReceiveFdPacket(int sock, char* buf, size_t cap) {
  FdPacket out;
  alignas(cmsghdr) char control[CMSG_SPACE(kFdRoom * sizeof(int))];
  iovec iov{buf, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out.err = errno;
    out.status = out.err == EAGAIN || out.err == EWOULDBLOCK ? FdPacket::Status::kWouldBlock
                                                             : FdPacket::Status::kError;
    return out;
  }
  int first = -1;
  bool other = false;
  const size_t fds = CollectFds(msg, first, other);
  out.size = static_cast<size_t>(n);
  // why: a truncated message or a descriptor count the protocol does not have is not a
  // message of it; what came is closed rather than half-used.
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || fds > 1 || other) {
    if (first >= 0) close(first);
    out.status = FdPacket::Status::kRefused;
    return out;
  }
  out.fd.reset(first);
  out.status = n == 0 && !out.fd ? FdPacket::Status::kClosed : FdPacket::Status::kMessage;
  return out;
}

int SendFdPacket(int sock, std::string_view bytes, int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? errno : 0;
}

}  // namespace skillmcp
