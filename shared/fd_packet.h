// One message of a unix SOCK_SEQPACKET socket with at most one descriptor beside it
// (SCM_RIGHTS), both ways: the egress helper's protocol (shared/egress_wire.h) moves
// connected sockets this way. Received descriptors are close-on-exec; anything the
// protocol does not allow (a longer message, a second descriptor, other control data) is
// refused whole, and every descriptor that came with it closed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>

#include "shared/unique_fd.h"

namespace skillmcp {

struct FdPacket {
  enum class Status {
    kMessage,     // `size` bytes in the buffer, and `fd` when one came
    kClosed,      // the peer closed (or sent an empty message, which no protocol here has)
    kWouldBlock,  // nothing to read on a non-blocking socket
    kRefused,     // longer than the buffer, or not at most one descriptor: `size` bytes
                  // (at most the buffer's) are there to read a header from, `fd` is empty
    kError,       // recvmsg failed: `err`
  };
  Status status = Status::kError;
  size_t size = 0;
  UniqueFd fd;
  int err = 0;
};

// One recvmsg of at most `cap` bytes into `buf`; retries EINTR.
FdPacket ReceiveFdPacket(int sock, char* buf, size_t cap);

// One sendmsg of `bytes`, with `fd` when it is not -1; never waits, retries EINTR, never
// raises SIGPIPE. 0 or the errno (EAGAIN when the peer's queue is full).
int SendFdPacket(int sock, std::string_view bytes, int fd);

}  // namespace skillmcp
