#include "egress/dial.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "egress/address_class.h"

namespace skillmcp::egress {

bool Dial::Refused(const Peer& p) const {
  // why: allowing local addresses is for the operator's own services; a declared name's
  // DNS owner could otherwise point it at 169.254.169.254 and read the instance's
  // credentials, so only an address the operator pinned reaches a metadata service.
  if (allow_local_) return !pinned_ && IsMetadataService(ClassifyAddress(p.family, p.address, {}));
  // why: a non-global address is the host's own services, its link or a cloud metadata
  // service (address_class.cc says which); only a broker that allows local addresses
  // (a test rig, a local service the operator declared) reaches one. Without the host's
  // own addresses, any address could be one of them.
  return host_ == nullptr || ClassifyAddress(p.family, p.address, *host_) != AddressClass::kGlobal;
}

bool Dial::Advance(int64_t now_ms) {
  while (next_ < peers_.size()) {
    const Peer& p = peers_[next_];
    const bool refused = Refused(p);
    if (!refused && now_ms >= request_deadline_ms_) {
      error_ = ETIMEDOUT;  // the request's time is up: no further address is tried
      return false;
    }
    ++next_;
    peer_ = p;
    if (refused) {
      if (!tried_) error_ = EACCES;
      continue;
    }
    tried_ = true;
    sock_.reset(::socket(p.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!sock_) {
      error_ = errno;
      continue;
    }
    sockaddr_storage sa;
    const socklen_t len = PeerToSockaddr(p, sa);
    if (connect(sock_.get(), reinterpret_cast<const sockaddr*>(&sa), len) == 0) {
      error_ = 0;
      return false;
    }
    if (errno == EINPROGRESS) {
      deadline_ms_ = std::min(now_ms + timeout_ms_, request_deadline_ms_);
      return true;
    }
    error_ = errno;
    sock_.reset();
  }
  return false;
}

bool Dial::OnReady(int64_t now_ms) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(sock_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == 0) {
    error_ = 0;
    return false;
  }
  return Fail(err, now_ms);
}

bool Dial::OnTimeout(int64_t now_ms) { return Fail(ETIMEDOUT, now_ms); }

bool Dial::Fail(int err, int64_t now_ms) {
  error_ = err;
  sock_.reset();
  return Advance(now_ms);
}

}  // namespace skillmcp::egress
