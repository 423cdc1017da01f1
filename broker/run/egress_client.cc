#include "broker/run/egress_client.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "shared/fd_packet.h"

namespace skillmcp {

EgressClient::EgressClient(EventLoop& loop, UniqueFd connected) : loop_(loop), sock_(std::move(connected)) {
  // why: the loop reads until the socket would block; a blocking read would stop it.
  if (sock_.valid()) fcntl(sock_.get(), F_SETFL, fcntl(sock_.get(), F_GETFL) | O_NONBLOCK);
  if (sock_.valid()) loop_.AddFd(sock_.get(), EPOLLIN, [this](uint32_t e) { OnReadable(e); });
}

EgressClient::EgressClient(EventLoop& loop, std::string socket_path)
    : loop_(loop), path_(std::move(socket_path)) {}

EgressClient::~EgressClient() {
  if (sock_.valid()) loop_.RemoveFd(sock_.get());
}

bool EgressClient::Connect() {
  if (sock_.valid()) return true;
  if (path_.empty()) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  // A unix socket connects at once or fails at once (EAGAIN: the helper's queue is full).
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return false;
  sock_ = std::move(fd);
  loop_.AddFd(sock_.get(), EPOLLIN, [this](uint32_t e) { OnReadable(e); });
  return true;
}

bool EgressClient::Reachable() { return Connect(); }

void EgressClient::Later(uint32_t id, int err) {
  // Answered from the loop, never from inside Dial: the caller is mid-way through its own
  // bookkeeping.
  loop_.AddTimer(0, [this, id, err] {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Answer answer = std::move(it->second);
    pending_.erase(it);
    EgressAnswer a;
    a.id = id;
    a.error = err;
    if (answer) answer(a, UniqueFd());
  });
}

uint32_t EgressClient::Dial(const std::string& host, uint16_t port, bool allow_local,
                            Answer answer) {
  const uint32_t id = next_id_++;
  pending_.emplace(id, std::move(answer));
  if (pending_.size() > kEgressClientMaxPending) {
    Later(id, EAGAIN);
    return id;
  }
  std::optional<std::string> request = EncodeEgressRequest({id, host, port, allow_local});
  if (!request) {
    Later(id, EINVAL);
    return id;
  }
  if (!Connect()) {
    Later(id, EHOSTUNREACH);
    return id;
  }
  if (int err = SendFdPacket(sock_.get(), *request, -1); err != 0) {
    Later(id, err == EAGAIN ? EAGAIN : EHOSTUNREACH);
    if (err != EAGAIN) Disconnect(EHOSTUNREACH);
  }
  return id;
}

void EgressClient::Forget(uint32_t id) {
  auto it = pending_.find(id);
  if (it != pending_.end()) it->second = nullptr;
}

void EgressClient::OnReadable(uint32_t) {
  for (int i = 0; i < 64 && sock_.valid(); ++i) {
    char buf[kEgressAnswerBytes + 1];
    FdPacket p = ReceiveFdPacket(sock_.get(), buf, sizeof buf);
    if (p.status == FdPacket::Status::kWouldBlock) return;
    if (p.status == FdPacket::Status::kClosed || p.status == FdPacket::Status::kError) {
      Disconnect(EHOSTUNREACH);
      return;
    }
    if (p.status != FdPacket::Status::kMessage) continue;  // refused whole, nothing kept
    std::optional<EgressAnswer> a = TakeEgressAnswer(std::string_view(buf, p.size), p.fd);
    if (!a) continue;
    auto it = pending_.find(a->id);
    if (it == pending_.end()) continue;  // not ours, or answered already: the fd closes
    Answer answer = std::move(it->second);
    pending_.erase(it);
    if (answer) answer(*a, std::move(p.fd));
  }
}

void EgressClient::Disconnect(int err) {
  if (sock_.valid()) {
    loop_.RemoveFd(sock_.get());
    sock_.reset();
  }
  for (auto& [id, answer] : pending_) Later(id, err);
}

}  // namespace skillmcp
