#include "broker/run/run_egress.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "shared/fd_packet.h"

namespace skillmcp {

RunEgress::RunEgress(EventLoop& loop, EgressClient* client, std::vector<EgressRule> rules,
                     const EgressSettings& settings, UniqueFd channel)
    : loop_(loop),
      client_(client),
      rules_(std::move(rules)),
      patterns_(settings.patterns),
      allow_local_(settings.allow_local),
      pins_(settings.pins),
      channel_(std::move(channel)) {
  // why: the loop reads until the channel would block; a blocking read would stop it.
  if (channel_.valid()) fcntl(channel_.get(), F_SETFL, fcntl(channel_.get(), F_GETFL) | O_NONBLOCK);
  // why a bounded read per wake: one busy run cannot starve the loop; the loop calls again
  // while frames are left (level-triggered).
  if (channel_.valid()) loop_.AddFd(channel_.get(), EPOLLIN, [this](uint32_t) { Read(64); });
}

RunEgress::~RunEgress() {
  for (const auto& [dial, id] : dials_)
    if (client_ != nullptr) client_->Forget(dial);
  if (closed_timer_) loop_.CancelTimer(closed_timer_);
  on_closed_ = nullptr;
  Close();
}

void RunEgress::Close() {
  if (!channel_.valid()) return;
  loop_.RemoveFd(channel_.get());
  channel_.reset();
  // From the loop: the caller may destroy this object.
  if (on_closed_)
    closed_timer_ = loop_.AddTimer(0, [this] {
      closed_timer_ = 0;
      if (auto done = std::move(on_closed_)) done();
    });
}

void RunEgress::Drain() { Read(-1); }

void RunEgress::Refuse(EgressSummary::Refusal r) {
  if (summary_.refused.size() >= kEgressSummaryMaxEntries) {
    if (summary_.refused_omitted < UINT32_MAX) ++summary_.refused_omitted;
    return;
  }
  summary_.refused.push_back(std::move(r));
}

void RunEgress::Deny(uint32_t id, int err) {
  if (auto frame = EncodeEgressToMirror(EgressDenied{id, err}))
    (void)SendFdPacket(channel_.get(), *frame, -1);
}

void RunEgress::OnConnect(const EgressConnect& m) {
  // why the broker's own rules: the mirror runs as the run's user; what it asks for is
  // checked here, by name and port, whatever its resolver answered.
  std::string refusal = NormaliseEgressHost(m.host, /*wildcard=*/false) != m.host
                            ? "not among the hosts the run may reach"
                            : RunConnectRefusal(rules_, patterns_, m.host, m.port);
  if (!refusal.empty()) {
    Refuse({"policy", m.host, m.port, std::move(refusal)});
    Deny(m.id, EACCES);
    return;
  }
  if (client_ == nullptr || dials_.size() >= kRunEgressMaxPending) {
    Refuse({"connect", m.host, m.port,
            client_ == nullptr ? "no egress helper is reachable" : "too many connections opening"});
    Deny(m.id, client_ == nullptr ? EHOSTUNREACH : EAGAIN);
    return;
  }
  const uint32_t mirror_id = m.id;
  const std::string host = m.host;
  const uint16_t port = m.port;
  // The answer arrives later on the loop; `this` outlives it (the destructor forgets every
  // dial still open).
  // why the address for a pinned name: the operator chose where that name leads; the
  // receipt still names the host the run asked for.
  std::string target = host;
  for (const auto& [name, address] : pins_)
    if (name == host) target = address;
  const uint32_t dial = client_->Dial(target, port, allow_local_,
      [this, mirror_id, host, port](const EgressAnswer& a, UniqueFd socket) {
        for (auto it = dials_.begin(); it != dials_.end(); ++it) {
          if (it->second == mirror_id) {
            dials_.erase(it);
            break;
          }
        }
        if (a.error != 0 || !socket.valid() || !channel_.valid()) {
          Refuse({"connect", host, port, std::strerror(a.error != 0 ? a.error : EIO)});
          if (channel_.valid()) Deny(mirror_id, a.error != 0 ? a.error : EIO);
          return;
        }
        std::optional<std::string> frame = EncodeEgressToMirror(EgressOpened{mirror_id});
        if (!frame || SendFdPacket(channel_.get(), *frame, socket.get()) != 0) return;
        Count(host, port, mirror_id);
      });
  dials_[dial] = mirror_id;
}

void RunEgress::Count(const std::string& host, uint16_t port, uint32_t mirror_id) {
  for (size_t i = 0; i < summary_.hosts.size(); ++i) {
    if (summary_.hosts[i].host == host && summary_.hosts[i].port == port) {
      ++summary_.hosts[i].connections;
      host_of_[mirror_id] = i;
      return;
    }
  }
  if (summary_.hosts.size() < kEgressSummaryMaxEntries) {
    summary_.hosts.push_back({host, port, 1, 0, 0});
    host_of_[mirror_id] = summary_.hosts.size() - 1;
    return;
  }
  // why: the connection is open and carries bytes; past the list it is counted with the
  // others left out, or the receipt would hide it.
  EgressSummary::Omitted& o = summary_.hosts_omitted;
  const auto key = std::make_pair(host, port);
  if (omitted_.count(key) == 0) {
    ++o.hosts;
    if (omitted_.size() < kRunEgressOmittedTracked) omitted_.insert(key);
  }
  ++o.connections;
  host_of_[mirror_id] = std::string::npos;
}

void RunEgress::OnClosed(const EgressClosed& m) {
  auto it = host_of_.find(m.id);
  if (it == host_of_.end()) return;
  // Summed as the mirror says: its counts are the only ones (it splices the bytes).
  uint64_t& out = it->second == std::string::npos ? summary_.hosts_omitted.bytes_out
                                                  : summary_.hosts[it->second].bytes_out;
  uint64_t& in = it->second == std::string::npos ? summary_.hosts_omitted.bytes_in
                                                 : summary_.hosts[it->second].bytes_in;
  out += m.bytes_out;
  in += m.bytes_in;
  host_of_.erase(it);
}

void RunEgress::Read(int max) {
  for (int i = 0; (max < 0 || i < max) && channel_.valid(); ++i) {
    char buf[kEgressFrameMaxBytes + 1];
    FdPacket p = ReceiveFdPacket(channel_.get(), buf, sizeof buf);
    if (p.status == FdPacket::Status::kWouldBlock) return;
    if (p.status == FdPacket::Status::kClosed || p.status == FdPacket::Status::kError) {
      Close();
      return;
    }
    // why: the mirror sends no descriptor; one that came is closed with the packet.
    if (p.status != FdPacket::Status::kMessage || p.fd.valid()) continue;
    std::optional<EgressFromMirror> m = DecodeEgressFromMirror(std::string_view(buf, p.size));
    if (!m) continue;
    if (const auto* c = std::get_if<EgressConnect>(&*m)) {
      OnConnect(*c);
    } else if (const auto* r = std::get_if<EgressRefused>(&*m)) {
      Refuse({r->kind, r->target, r->port,
              r->kind == "dns" ? "not a declared host" : "outside the declared hosts and ports"});
    } else if (const auto* closed = std::get_if<EgressClosed>(&*m)) {
      OnClosed(*closed);
    } else if (const auto* untold = std::get_if<EgressRefusedUntold>(&*m)) {
      summary_.refused_omitted += std::min(untold->count, UINT32_MAX - summary_.refused_omitted);
    }
  }
}

}  // namespace skillmcp
