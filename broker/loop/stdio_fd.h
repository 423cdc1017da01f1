// How the broker reads stdin and writes stdout without ever blocking its event loop, and
// without changing a descriptor it shares with other processes (docs/wire.md §10).
//   socket (systemd Accept=yes): recv/sendmsg with MSG_DONTWAIT, the file is left alone;
//   pipe, FIFO, tty: a private non-blocking description opened through /proc/self/fd,
//     else (no /proc) O_NONBLOCK on the shared one, put back at exit;
//   regular file, /dev/null (epoll refuses them): plain reads and writes, which never wait
//     for a peer.
#pragma once

#include <sys/uio.h>

#include "shared/unique_fd.h"

namespace skillmcp {

class StdioFd {
 public:
  enum class Kind { kSocket, kPollable, kPlain };

  StdioFd() = default;
  StdioFd(const StdioFd&) = delete;
  StdioFd& operator=(const StdioFd&) = delete;
  ~StdioFd() { RestoreFlags(); }

  // Prepares `fd` (STDIN_FILENO for reading, STDOUT_FILENO for writing).
  void Open(int fd, bool for_write);
  // epoll refused the descriptor: it is read or written with plain calls from now on.
  void MarkNotPollable() { kind_ = Kind::kPlain; }
  // Puts back the flags of a shared description this process changed.
  void RestoreFlags();

  int fd() const { return fd_; }
  Kind kind() const { return kind_; }
  // As read(2) / writev(2); never waits for a peer unless kind() is kPlain.
  ssize_t Read(char* buf, size_t size) const;
  ssize_t Write(const iovec* iov, int count) const;

 private:
  int fd_ = -1;
  UniqueFd own_;  // the private description, when one could be opened
  Kind kind_ = Kind::kPlain;
  int shared_flags_ = -1;  // original flags of a shared description we made non-blocking
};

}  // namespace skillmcp
