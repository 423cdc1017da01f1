// Where the helper's brokers come from: the listening socket of systemd socket activation
// (one broker per accepted connection), or one connected socket a broker started it with.
#pragma once

#include <string>

namespace skillmcp::egress {

// The descriptor systemd passed (sd_listen_fds(3): fd 3, LISTEN_PID this process,
// LISTEN_FDS 1), checked to be a listening unix SOCK_SEQPACKET socket; -1 with `error`
// empty when the process was not socket-activated, -1 with `error` set when the variables
// are there but wrong. Reads the environment; call it before the environment is cleared.
int TakeActivationSocket(std::string* error);

// Whether `fd` is a connected (not listening) unix SOCK_SEQPACKET socket.
bool CheckConnectionSocket(int fd, std::string* error);

}  // namespace skillmcp::egress
