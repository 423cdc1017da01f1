#include "egress/server.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "shared/egress_allowlist.h"
#include "shared/fd_packet.h"
#include "shared/log.h"

namespace skillmcp::egress {
namespace {

constexpr uint64_t kListener = 1, kResolver = 2, kBroker = 3, kDial = 4;
constexpr int kKindShift = 56;
constexpr uint64_t kKeyMask = (uint64_t{1} << kKindShift) - 1;
// Requests read from one broker per wake-up, so that one busy broker cannot starve others.
constexpr int kReadsPerWake = 8;
// How long accepting pauses when the process is out of descriptors.
constexpr int64_t kAcceptPauseMs = 1000;

uint64_t Tag(uint64_t kind, uint64_t key) { return kind << kKindShift | key; }

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

EgressAnswer Refusal(uint32_t id, int error, const std::optional<Peer>& peer) {
  EgressAnswer a;
  a.id = id;
  a.error = error;
  if (peer) {
    a.family = peer->family;
    a.address = peer->address;
    a.port = peer->port;
  }
  return a;
}

}  // namespace

Server::Server(int listen_fd, int connection_fd, int connect_timeout_ms, int request_timeout_ms)
    : epoll_(epoll_create1(EPOLL_CLOEXEC)),
      listen_(listen_fd),
      single_(listen_fd < 0),
      connect_timeout_ms_(connect_timeout_ms),
      request_timeout_ms_(request_timeout_ms) {
  if (single_) AddBroker(UniqueFd(connection_fd));
}

bool Server::Watch(int op, int fd, uint32_t events, uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  return epoll_ctl(epoll_.get(), op, fd, &ev) == 0;
}

int Server::Run() {
  if (!epoll_ || resolver_.fd() < 0 ||
      !Watch(EPOLL_CTL_ADD, resolver_.fd(), EPOLLIN, Tag(kResolver, 0)) ||
      (listen_ && !Watch(EPOLL_CTL_ADD, listen_.get(), EPOLLIN, Tag(kListener, 0)))) {
    LOG_ERROR_ERRNO("egress: cannot set up the event loop");
    return 1;
  }
  if (single_ && brokers_.empty()) {
    LOG_ERROR("egress: cannot watch the broker's connection");
    return 1;
  }
  epoll_event events[32];
  for (;;) {
    if (single_ && brokers_.empty()) return 0;
    const int n = epoll_wait(epoll_.get(), events, 32, NextTimeout(NowMs()));
    if (n < 0 && errno != EINTR) {
      LOG_ERROR_ERRNO("egress: epoll_wait");
      return 1;
    }
    const int64_t now = NowMs();
    for (int i = 0; i < n; ++i) {
      const uint64_t kind = events[i].data.u64 >> kKindShift;
      const uint64_t key = events[i].data.u64 & kKeyMask;
      const uint32_t ev = events[i].events;
      if (kind == kListener) Accept(now);
      if (kind == kResolver) Resolved(now);
      if (kind == kDial && requests_.count(key) != 0) DialEvent(key, false, now);
      if (kind == kBroker && brokers_.count(key) != 0) {
        if (ev & EPOLLOUT) Flush(key, now);
        if (brokers_.count(key) != 0 && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
          ReadBroker(key, now);
      }
    }
    Expire(now);
  }
}

void Server::AddBroker(UniqueFd fd) {
  const uint64_t key = next_key_++;
  if (!Watch(EPOLL_CTL_ADD, fd.get(), EPOLLIN, Tag(kBroker, key))) {
    LOG_WARN_ERRNO("egress: cannot watch a broker's connection");
    return;
  }
  brokers_[key].fd = std::move(fd);
}

void Server::DropBroker(uint64_t key) {
  brokers_.erase(key);  // closing the socket takes it out of the epoll set
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (it->second.broker != key) {
      ++it;
    } else if (it->second.dial) {
      it = requests_.erase(it);  // its connection attempt ends with it
    } else {
      it->second.broker = 0;  // resolving: the thread's result is dropped when it comes
      ++it;
    }
  }
}

void Server::Accept(int64_t now) {
  if (accept_paused_until_ms_ >= 0) return;
  for (;;) {
    UniqueFd fd(accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        LOG_WARN_ERRNO("egress: cannot accept a broker for now");
        accept_paused_until_ms_ = now + kAcceptPauseMs;
        Watch(EPOLL_CTL_MOD, listen_.get(), 0, Tag(kListener, 0));
      }
      return;  // EAGAIN, or an error of that one connection
    }
    if (brokers_.size() >= kMaxBrokers) {
      LOG_WARN("egress: %zu brokers connected already; one more refused", brokers_.size());
      continue;  // closed here
    }
    AddBroker(std::move(fd));
  }
}

void Server::ReadBroker(uint64_t key, int64_t now) {
  for (int i = 0; i < kReadsPerWake; ++i) {
    auto it = brokers_.find(key);
    // While its answers wait, its requests wait in its socket (server.h, kStalledBrokerMs).
    if (it == brokers_.end() || !it->second.out.empty()) return;
    char buf[kEgressRequestMaxBytes];
    FdPacket p = ReceiveFdPacket(it->second.fd.get(), buf, sizeof buf);
    if (p.status == FdPacket::Status::kWouldBlock) return;
    if (p.status == FdPacket::Status::kClosed || p.status == FdPacket::Status::kError) {
      DropBroker(key);
      return;
    }
    const std::string_view bytes(buf, p.size);
    // A request never comes with a descriptor, nor longer than the longest one.
    std::optional<EgressRequest> request;
    if (p.status == FdPacket::Status::kMessage && !p.fd) request = DecodeEgressRequest(bytes);
    p.fd.reset();
    if (request) {
      Handle(key, *request, now);
    } else if (std::optional<uint32_t> id = PeekEgressRequestId(bytes)) {
      // why: a request malformed after its header is answered, so that the broker's
      // waiting connection ends; the helper and the broker's other requests go on.
      Answer(key, Refusal(*id, EINVAL, std::nullopt), UniqueFd());
    } else {
      LOG_WARN("egress: a broker sent a message that is not a request; dropped that broker");
      DropBroker(key);
      return;
    }
    Flush(key, now);
  }
}

size_t Server::InFlight(uint64_t broker) const {
  return static_cast<size_t>(
      std::count_if(requests_.begin(), requests_.end(),
                    [&](const auto& entry) { return entry.second.broker == broker; }));
}

void Server::Handle(uint64_t broker, const EgressRequest& request, int64_t now) {
  // why: each request in flight may hold a thread and a socket; the bounds keep a broker
  // that floods (or a resolver that hangs) from taking the host's tasks or descriptors,
  // and the share keeps it from taking the other brokers' places (server.h).
  if (requests_.size() >= kMaxInFlight || InFlight(broker) >= kMaxInFlightPerBroker) {
    Answer(broker, Refusal(request.id, EAGAIN, std::nullopt), UniqueFd());
    return;
  }
  const uint64_t key = next_key_++;
  Request& r = requests_[key];
  r.broker = broker;
  r.id = request.id;
  r.allow_local = request.allow_local;
  r.pinned = IsAddressLiteral(request.host);
  r.deadline_ms = now + request_timeout_ms_;
  if (IsAddressLiteral(request.host)) {
    StartDial(key, ResolveLiteral(request.host, request.port), now);
  } else if (!resolver_.Start(key, request.host, request.port)) {
    requests_.erase(key);
    Answer(broker, Refusal(request.id, EAGAIN, std::nullopt), UniqueFd());
  }
}

void Server::Answer(uint64_t broker, const EgressAnswer& answer, UniqueFd fd) {
  auto it = brokers_.find(broker);
  if (it == brokers_.end()) return;
  Outgoing& o = it->second.out.emplace_back();
  if (!EncodeEgressAnswer(answer, o.bytes)) {
    // Cannot be: every answer is built from an errno and an address this helper made.
    LOG_ERROR("egress: an answer did not encode (error %d)", answer.error);
    it->second.out.pop_back();
    return;
  }
  o.fd = std::move(fd);
}

void Server::Flush(uint64_t key, int64_t now) {
  auto it = brokers_.find(key);
  if (it == brokers_.end()) return;
  Broker& b = it->second;
  while (!b.out.empty()) {
    const Outgoing& o = b.out.front();
    const int err = SendFdPacket(b.fd.get(), {o.bytes, sizeof o.bytes}, o.fd.get());
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (b.blocked_since_ms < 0) {
        b.blocked_since_ms = now;
        Watch(EPOLL_CTL_MOD, b.fd.get(), EPOLLOUT, Tag(kBroker, key));
      }
      return;
    }
    if (err != 0) {
      DropBroker(key);
      return;
    }
    b.out.pop_front();
  }
  if (b.blocked_since_ms >= 0) {
    b.blocked_since_ms = -1;
    Watch(EPOLL_CTL_MOD, b.fd.get(), EPOLLIN, Tag(kBroker, key));
  }
}

void Server::Resolved(int64_t now) {
  for (auto& [key, resolution] : resolver_.Take()) {
    auto it = requests_.find(key);
    if (it == requests_.end()) continue;
    if (it->second.broker == 0 || it->second.answered) {
      requests_.erase(it);  // its broker is gone, or it was answered when its time ran out
      continue;
    }
    StartDial(key, std::move(resolution), now);
  }
}

void Server::StartDial(uint64_t key, Resolution resolution, int64_t now) {
  Request& r = requests_.at(key);
  if (resolution.error != 0) {
    const uint64_t broker = r.broker;
    Answer(broker, Refusal(r.id, resolution.error, std::nullopt), UniqueFd());
    requests_.erase(key);
    Flush(broker, now);
    return;
  }
  r.dial.emplace(std::move(resolution.peers), r.allow_local, r.pinned,
                 r.allow_local ? nullptr : host_addresses_.Get(now), connect_timeout_ms_,
                 r.deadline_ms);
  if (!r.dial->Advance(now)) {
    FinishDial(key);
    return;
  }
  if (!Watch(EPOLL_CTL_ADD, r.dial->socket(), EPOLLOUT, Tag(kDial, key))) {
    DialEvent(key, true, now);  // cannot wait for it: as if it timed out
  }
}

void Server::DialEvent(uint64_t key, bool timed_out, int64_t now) {
  Request& r = requests_.at(key);
  // Out of the set before the socket is handed on or replaced by the next address's.
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, r.dial->socket(), nullptr);
  const bool waiting = timed_out ? r.dial->OnTimeout(now) : r.dial->OnReady(now);
  if (!waiting) {
    FinishDial(key);
    return;
  }
  if (!Watch(EPOLL_CTL_ADD, r.dial->socket(), EPOLLOUT, Tag(kDial, key))) {
    DialEvent(key, true, now);
  }
}

void Server::FinishDial(uint64_t key) {
  auto it = requests_.find(key);
  Request& r = it->second;
  const uint64_t broker = r.broker;
  EgressAnswer answer = Refusal(r.id, r.dial->error(), r.dial->peer());
  UniqueFd sock = answer.error == 0 ? r.dial->TakeSocket() : UniqueFd();
  requests_.erase(it);
  Answer(broker, answer, std::move(sock));
  Flush(broker, NowMs());
}

void Server::Expire(int64_t now) {
  std::vector<uint64_t> late;
  for (const auto& [key, r] : requests_)
    if (r.dial && r.dial->socket() >= 0 && r.dial->deadline_ms() <= now) late.push_back(key);
  for (uint64_t key : late)
    if (requests_.count(key) != 0) DialEvent(key, true, now);
  // why: a name server that never answers would hold the broker's connection open for as
  // long as the host's resolver retries; the request's deadline answers it instead.
  std::vector<uint64_t> unresolved;
  for (const auto& [key, r] : requests_)
    if (!r.dial && !r.answered && r.broker != 0 && r.deadline_ms <= now) unresolved.push_back(key);
  for (uint64_t key : unresolved) {
    Request& r = requests_.at(key);
    if (r.broker == 0) continue;  // its broker was dropped by a flush just before
    r.answered = true;
    const uint64_t broker = r.broker;
    Answer(broker, Refusal(r.id, ETIMEDOUT, std::nullopt), UniqueFd());
    Flush(broker, now);
  }
  std::vector<uint64_t> stalled;
  for (const auto& [key, b] : brokers_)
    if (b.blocked_since_ms >= 0 && now - b.blocked_since_ms >= kStalledBrokerMs)
      stalled.push_back(key);
  for (uint64_t key : stalled) {
    LOG_WARN("egress: a broker left its answers unread for %lld ms; dropped it",
             static_cast<long long>(kStalledBrokerMs));
    DropBroker(key);
  }
  if (accept_paused_until_ms_ >= 0 && now >= accept_paused_until_ms_) {
    accept_paused_until_ms_ = -1;
    Watch(EPOLL_CTL_MOD, listen_.get(), EPOLLIN, Tag(kListener, 0));
  }
}

int Server::NextTimeout(int64_t now) const {
  int64_t next = -1;
  auto consider = [&](int64_t at) { next = next < 0 ? at : std::min(next, at); };
  for (const auto& [key, r] : requests_) {
    if (r.dial && r.dial->socket() >= 0) consider(r.dial->deadline_ms());
    if (!r.dial && !r.answered && r.broker != 0) consider(r.deadline_ms);
  }
  for (const auto& [key, b] : brokers_)
    if (b.blocked_since_ms >= 0) consider(b.blocked_since_ms + kStalledBrokerMs);
  if (accept_paused_until_ms_ >= 0) consider(accept_paused_until_ms_);
  if (next < 0) return -1;
  return static_cast<int>(std::clamp<int64_t>(next - now, 0, 60000));
}

}  // namespace skillmcp::egress
