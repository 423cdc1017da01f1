#include "broker/loop/stdio_fd.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace skillmcp {

void StdioFd::Open(int fd, bool for_write) {
  RestoreFlags();
  own_.reset();
  fd_ = fd;
  struct stat st {};
  if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) {
    kind_ = Kind::kPlain;
    return;
  }
  if (S_ISSOCK(st.st_mode)) {
    // Why: stdin and stdout share the connection's one description; MSG_DONTWAIT makes
    // each call non-blocking without changing the flags the other end of us relies on.
    kind_ = Kind::kSocket;
    return;
  }
  kind_ = Kind::kPollable;
  // Why: a pipe or tty may be shared with the shell or the client; a description of our
  // own carries O_NONBLOCK without making their reads and writes fail with EAGAIN.
  // Why only pipes and terminals other than a pty master: reopening a cloning device
  // (/dev/ptmx, /dev/net/tun) yields a new, unconnected instance with the same inode.
  int pty_number = 0;
  const bool reopenable = S_ISFIFO(st.st_mode) || (S_ISCHR(st.st_mode) && isatty(fd) &&
                                                   ioctl(fd, TIOCGPTN, &pty_number) != 0);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (reopenable) {
    int mode = (for_write ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    own_.reset(open(path.c_str(), mode));
    if (own_.valid()) {
      struct stat again {};
      // Why: only the same object will do (a /proc that resolves elsewhere is not used).
      if (fstat(own_.get(), &again) == 0 && again.st_dev == st.st_dev &&
          again.st_ino == st.st_ino) {
        fd_ = own_.get();
        return;
      }
      own_.reset();
    }
  }
  // No /proc, or not reopenable: stdout must still never block, so the shared description is
  // switched and put back at exit. stdin stays as it is: it is read only when epoll reports data.
  if (!for_write) return;
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
    shared_flags_ = flags;
  }
}

void StdioFd::RestoreFlags() {
  if (shared_flags_ >= 0) fcntl(fd_, F_SETFL, shared_flags_);
  shared_flags_ = -1;
}

ssize_t StdioFd::Read(char* buf, size_t size) const {
  if (kind_ == Kind::kSocket) return recv(fd_, buf, size, MSG_DONTWAIT);
  return read(fd_, buf, size);
}

ssize_t StdioFd::Write(const iovec* iov, int count) const {
  if (kind_ == Kind::kSocket) {
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(count);
    return sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  return writev(fd_, iov, count);
}

}  // namespace skillmcp
