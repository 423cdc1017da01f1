// One request's connection attempts: the resolved addresses in order, those that are not
// global skipped unless the request allows local ones (address_class.h), each tried with
// a non-blocking connect and a deadline of its own, never past the request's; the first
// that connects wins. The caller waits for the socket in progress (EPOLLOUT) or its
// deadline, then says which.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "egress/address_class.h"
#include "egress/peer.h"
#include "shared/unique_fd.h"

namespace skillmcp::egress {

class Dial {
 public:
  // `host`: the host's own addresses, refused like loopback; null when they could not be
  // read, and then every address is refused unless `allow_local`. `pinned`: the request
  // named an address, not a name (the operator's SKILL_MCP_EGRESS_RESOLVE): with
  // `allow_local` only such a request reaches a metadata service (IsMetadataService).
  // `request_deadline_ms`: no attempt goes on past it (ETIMEDOUT).
  Dial(std::vector<Peer> peers, bool allow_local, bool pinned,
       std::shared_ptr<const HostAddresses> host, int timeout_ms, int64_t request_deadline_ms)
      : peers_(std::move(peers)),
        allow_local_(allow_local),
        pinned_(pinned),
        host_(std::move(host)),
        timeout_ms_(timeout_ms),
        request_deadline_ms_(request_deadline_ms) {}

  // Tries addresses until one is in progress (true: wait for socket() until deadline_ms())
  // or the dial is over (false: error(), peer(), TakeSocket()).
  bool Advance(int64_t now_ms);
  // The socket in progress is writable or in error; false when the dial is over.
  bool OnReady(int64_t now_ms);
  // The socket in progress missed its deadline; false when the dial is over.
  bool OnTimeout(int64_t now_ms);

  int socket() const { return sock_.get(); }
  int64_t deadline_ms() const { return deadline_ms_; }
  // 0 (connected), ETIMEDOUT (the last address, or the request, ran out of time) or
  // connect's errno for the last address tried, EACCES when every address was refused,
  // ENOENT when there was none.
  int error() const { return error_; }
  // The peer connected to, or the last address tried or refused.
  const std::optional<Peer>& peer() const { return peer_; }
  UniqueFd TakeSocket() { return std::move(sock_); }

 private:
  bool Fail(int err, int64_t now_ms);

  bool Refused(const Peer& p) const;

  std::vector<Peer> peers_;
  bool allow_local_;
  bool pinned_;
  std::shared_ptr<const HostAddresses> host_;
  int timeout_ms_;
  int64_t request_deadline_ms_;
  size_t next_ = 0;
  bool tried_ = false;  // a connect was attempted, so its errno outranks EACCES
  UniqueFd sock_;
  int64_t deadline_ms_ = 0;
  int error_ = ENOENT;
  std::optional<Peer> peer_;
};

}  // namespace skillmcp::egress
