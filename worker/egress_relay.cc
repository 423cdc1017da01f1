#include "worker/egress_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "shared/egress_allowlist.h"
#include "shared/egress_channel.h"
#include "shared/monotonic.h"
#include "worker/egress_dns.h"
#include "worker/egress_refuse.h"

namespace skillmcp::worker {
namespace {

// Asked for; the kernel may give less. Why not more: each of a run's connections holds
// two, in kernel memory its whole-run bound does not count.
constexpr size_t kPipeBytes = 256 << 10;
constexpr size_t kChunk = 256 << 10;  // per splice call
constexpr int kPerWake = 64;             // datagrams, accepts or packets handled per wake
constexpr int kFdsPerConnection = 6;     // two sockets and two pipes
constexpr int kFdsKeptFree = 16;         // for the mirror's own descriptors

// Closes with a reset, not an orderly end: the script sees its connection refused at once.
void Reset(UniqueFd& fd) {
  if (!fd.valid()) return;
  linger l{1, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  fd.reset();
}

bool MakePipe(UniqueFd& r, UniqueFd& w) {
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  r.reset(p[0]);
  w.reset(p[1]);
  (void)fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));  // best effort
  return true;
}

std::string AddressText(uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char out[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, out, sizeof out) ? out : "";
}

}  // namespace

EgressRelay::EgressRelay(EgressCell cell) : cell_(std::move(cell)), outbox_(cell_.channel.get()) {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    const long room = (static_cast<long>(nofile.rlim_cur) - kFdsKeptFree) / kFdsPerConnection;
    max_connections_ = std::min(kEgressMaxConnections, static_cast<size_t>(std::max(room, 0L)));
  }
}

bool EgressRelay::Allowed(const std::string& name) const {
  for (const EgressRule& rule : cell_.rules)
    if (EgressHostMatches(rule.host, name)) return true;
  return false;
}

std::optional<uint32_t> EgressRelay::Allot(const std::string& name) {
  if (auto it = allotted_.find(name); it != allotted_.end()) return it->second;
  if (allotted_.size() >= kEgressAllotMax) return std::nullopt;
  const uint32_t address = kEgressAllotBase + static_cast<uint32_t>(allotted_.size()) + 1;
  allotted_.emplace(name, address);
  names_.emplace(address, name);
  return address;
}

bool EgressRelay::Send(const std::string& frame) { return channel_open_ && outbox_.Send(frame); }

void EgressRelay::Report(const std::string& kind, const std::string& target, uint16_t port) {
  const std::string key = kind + " " + target + " " + std::to_string(port);
  if (reported_.count(key) != 0) return;
  if (reported_.size() >= kEgressMaxReports) {
    // why counted: the receipt's count of refusals left out is whole. Told apart by a
    // hash, in bounded memory; past that bound each attempt counts.
    const uint64_t hash = std::hash<std::string>{}(key);
    if (untold_seen_.count(hash) != 0) return;
    if (untold_seen_.size() < kEgressMaxUntoldKept) untold_seen_.insert(hash);
    if (untold_ < UINT32_MAX) ++untold_;
    return;
  }
  reported_.insert(key);
  if (auto frame = EncodeEgressFromMirror(EgressRefused{kind, target, port})) Send(*frame);
}

void EgressRelay::Collect(std::vector<pollfd>& fds) {
  entries_.clear();
  auto add = [&](int fd, short events, Entry e) {
    fds.push_back({fd, events, 0});
    entries_.push_back(e);
  };
  add(cell_.resolver.get(), POLLIN, {Source::kResolver});
  // why not while full: an accept that would fail (EMFILE) leaves the connection queued
  // and the listener readable, which would spin.
  const bool room = Busy() < max_connections_;
  for (size_t i = 0; i < cell_.listeners.size(); ++i)
    add(room ? cell_.listeners[i].fd.get() : -1, POLLIN, {Source::kListener, i});
  if (channel_open_)
    add(cell_.channel.get(), POLLIN | (outbox_.waiting() ? POLLOUT : 0), {Source::kChannel});
  if (cell_.tun.valid()) add(cell_.tun.get(), POLLIN, {Source::kTun});
  for (Connection& c : connections_) {
    // A descriptor with nothing to wait for is left out (-1): poll would report its
    // hang-up on every wake.
    short client = 0, upstream = 0;
    if (!c.up.src_eof && !c.up.shut && !c.up.pipe_full) client |= POLLIN;
    if (c.down.queued > 0) client |= POLLOUT;
    if (!c.down.src_eof && !c.down.shut && !c.down.pipe_full) upstream |= POLLIN;
    if (c.up.queued > 0) upstream |= POLLOUT;
    add(client ? c.client.get() : -1, client, {Source::kClient, 0, &c});
    add(upstream ? c.upstream.get() : -1, upstream, {Source::kUpstream, 0, &c});
  }
}

void EgressRelay::Handle(const std::vector<pollfd>& fds, size_t first) {
  // A connection's two entries are adjacent (Collect): one pump serves both.
  const Connection* pumped = nullptr;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const pollfd& p = fds[first + i];
    if (p.fd < 0 || p.revents == 0) continue;
    const Entry& e = entries_[i];
    switch (e.source) {
      case Source::kResolver:
        OnResolver();
        break;
      case Source::kListener:
        OnListener(cell_.listeners[e.listener]);
        break;
      case Source::kChannel:
        if (p.revents & POLLOUT) outbox_.Flush();
        if (p.revents & ~POLLOUT) OnChannel();
        break;
      case Source::kTun:
        OnTun();
        break;
      case Source::kClient:
      case Source::kUpstream:
        if (e.connection != pumped) Pump(*e.connection);
        pumped = e.connection;
        break;
    }
  }
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->Done()) {
      Close(*it);
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
  entries_.clear();
}

void EgressRelay::OnResolver() {
  for (int i = 0; i < kPerWake; ++i) {
    uint8_t buf[512];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = recvfrom(cell_.resolver.get(), buf, sizeof buf, MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;
    std::optional<std::vector<uint8_t>> answer = AnswerDnsQuery(
        std::span<const uint8_t>(buf, static_cast<size_t>(n)),
        [this](std::string_view name) -> std::optional<in_addr> {
          const std::string key(name);
          if (!Allowed(key)) {
            Report("dns", key, 0);
            return std::nullopt;
          }
          std::optional<uint32_t> address = Allot(key);
          if (!address) return std::nullopt;
          return in_addr{htonl(*address)};
        });
    if (answer)
      (void)sendto(cell_.resolver.get(), answer->data(), answer->size(), MSG_DONTWAIT,
                   reinterpret_cast<sockaddr*>(&from), len);
  }
}

void EgressRelay::OnListener(const EgressCell::Listener& listener) {
  for (int i = 0; i < kPerWake && Busy() < max_connections_; ++i) {
    UniqueFd client(accept4(listener.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) return;
    sockaddr_in local{};
    socklen_t len = sizeof local;
    if (getsockname(client.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      Reset(client);
      continue;
    }
    const uint32_t address = ntohl(local.sin_addr.s_addr);
    auto name = names_.find(address);
    // why: only an allotted address on a port its name allows is asked for; anything
    // else the script reached on the run's own loopback is refused here.
    if (name == names_.end() || !EgressAllows(cell_.rules, name->second, listener.port)) {
      Report("tcp", name == names_.end() ? AddressText(address) : name->second, listener.port);
      Reset(client);
      continue;
    }
    const uint32_t id = next_id_++;
    std::optional<std::string> frame = EncodeEgressFromMirror(EgressConnect{id, name->second, listener.port});
    if (!frame || !Send(*frame)) {
      Reset(client);
      continue;
    }
    pending_.emplace(id, Pending{std::move(client)});
  }
}

void EgressRelay::OnChannel() {
  for (int i = 0; i < kPerWake; ++i) {
    char buf[kEgressFrameMaxBytes + 1];
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(cell_.channel.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    std::vector<UniqueFd> got;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t k = 0; k < count; ++k) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
        got.emplace_back(fd);
      }
    }
    if (n <= 0) {
      // The broker is gone: nothing more will be opened; the connections open go on.
      channel_open_ = false;
      for (auto& [id, p] : pending_) Reset(p.client);
      pending_.clear();
      return;
    }
    std::optional<EgressToMirror> m =
        DecodeEgressToMirror(std::string_view(buf, static_cast<size_t>(n)));
    if (!m || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) continue;  // not the protocol
    const uint32_t id = std::visit([](const auto& v) { return v.id; }, *m);
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    UniqueFd client = std::move(it->second.client);
    pending_.erase(it);
    if (std::holds_alternative<EgressDenied>(*m) || got.size() != 1) {
      Reset(client);
      continue;
    }
    Connection& c = connections_.emplace_back();
    c.id = id;
    c.client = std::move(client);
    c.upstream = std::move(got[0]);
    (void)fcntl(c.upstream.get(), F_SETFL, fcntl(c.upstream.get(), F_GETFL) | O_NONBLOCK);
    if (!MakePipe(c.up.pipe_r, c.up.pipe_w) || !MakePipe(c.down.pipe_r, c.down.pipe_w))
      c.failed = true;
    else
      Pump(c);
  }
}

void EgressRelay::OnTun() {
  for (int i = 0; i < kPerWake; ++i) {
    uint8_t buf[2048];
    const ssize_t n = read(cell_.tun.get(), buf, sizeof buf);
    if (n <= 0) return;
    Refusal r = RefusePacket(std::span<const uint8_t>(buf, static_cast<size_t>(n)));
    if (!r.reply.empty()) (void)!write(cell_.tun.get(), r.reply.data(), r.reply.size());
    if (r.attempt) Report(r.attempt->protocol, r.attempt->address, r.attempt->port);
  }
}

bool EgressRelay::Pump(Direction& d, int src, int dst, bool& failed) {
  // A short splice means the source had no more, or the destination took no more, for
  // now: poll is level-triggered and says when either changes, so no call is spent to
  // hear EAGAIN. Returns whether the pipe filled and then drained some, when the source
  // may hold more at once.
  bool filled = d.queued >= kPipeBytes;
  if (filled) d.pipe_full = true;
  while (!d.src_eof && d.queued < kPipeBytes) {
    const ssize_t n = splice(src, nullptr, d.pipe_w.get(), nullptr, kChunk,
                             SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) {
      d.queued += static_cast<size_t>(n);
      filled = d.queued >= kPipeBytes;
      if (static_cast<size_t>(n) < kChunk) break;
    } else if (n == 0) {
      d.src_eof = true;
    } else if (errno == EAGAIN) {
      d.pipe_full = d.queued > 0;
      filled = d.pipe_full;
      break;
    } else if (errno != EINTR) {
      failed = true;
      return false;
    }
  }
  bool drained = false;
  while (d.queued > 0) {
    const ssize_t n = splice(d.pipe_r.get(), nullptr, dst, nullptr, d.queued,
                             SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0) {
      d.queued -= static_cast<size_t>(n);
      d.bytes += static_cast<uint64_t>(n);
      d.pipe_full = false;
      drained = true;
      if (d.queued > 0) break;  // the destination is full
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      failed = true;
      return false;
    }
  }
  if (d.src_eof && d.queued == 0 && !d.shut) {
    shutdown(dst, SHUT_WR);
    d.shut = true;
  }
  return filled && drained && !d.src_eof;
}

void EgressRelay::Pump(Connection& c) {
  // Each direction until it would block, and once more while a full pipe drained: the
  // pipe holds what the receiver is not taking.
  bool again_up = true, again_down = true;
  for (int round = 0; round < 2 && !c.failed && (again_up || again_down); ++round) {
    if (again_up) again_up = Pump(c.up, c.client.get(), c.upstream.get(), c.failed);
    if (again_down && !c.failed) again_down = Pump(c.down, c.upstream.get(), c.client.get(), c.failed);
  }
}

void EgressRelay::Close(Connection& c) {
  if (c.failed) {
    // why a reset both ways: one side failing must not leave the other waiting.
    Reset(c.client);
    Reset(c.upstream);
  }
  c.client.reset();
  c.upstream.reset();
  if (auto frame = EncodeEgressFromMirror(EgressClosed{c.id, c.up.bytes, c.down.bytes}))
    Send(*frame);
}

bool EgressRelay::Forwarding() const {
  for (const Connection& c : connections_)
    if (!c.failed && !c.up.shut) return true;
  return false;
}

void EgressRelay::Finish() {
  // Nothing of the run is left to use what the broker has not opened yet.
  for (auto& [id, p] : pending_) Reset(p.client);
  pending_.clear();
  // why forward first: what the script wrote before it ended waits in the mirror's
  // sockets, as it would in the kernel's after a close, and reaches its host the same way;
  // bounded, since the run's answer waits for this.
  const int64_t forward_by = MonotonicMs() + kEgressFinishForwardMs;
  std::vector<pollfd> fds;
  while (Forwarding()) {
    const int64_t left = forward_by - MonotonicMs();
    if (left <= 0) break;
    fds.clear();
    Collect(fds);
    if (poll(fds.data(), fds.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    Handle(fds, 0);
  }
  // why: the receipt's counts come only from reports; a connection the script left open
  // (a keep-alive agent's) is reported as its close would have been.
  for (Connection& c : connections_) Close(c);
  connections_.clear();
  if (untold_ > 0)
    if (auto frame = EncodeEgressFromMirror(EgressRefusedUntold{untold_})) Send(*frame);
  if (channel_open_) (void)outbox_.FlushBy(MonotonicMs() + kEgressFinishReportMs);
}

}  // namespace skillmcp::worker
