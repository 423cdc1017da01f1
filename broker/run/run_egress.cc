#include "broker/run/run_egress.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
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
  if (channel_.valid())
    loop_.AddFd(channel_.get(), EPOLLIN, [this](uint32_t e) { OnReadable(e); });
}

RunEgress::~RunEgress() {
  for (const auto& [dial, id] : dials_)
    if (client_ != nullptr) client_->Forget(dial);
  Close();
}

void RunEgress::Close() {
  if (!channel_.valid()) return;
  loop_.RemoveFd(channel_.get());
  channel_.reset();
}

void RunEgress::Drain() { OnReadable(EPOLLIN); }

void RunEgress::Refuse(EgressSummary::Refusal r) {
  if (summary_.refused.size() >= kEgressSummaryMaxEntries) {
    ++summary_.refused_omitted;
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
        size_t index = summary_.hosts.size();
        for (size_t i = 0; i < summary_.hosts.size(); ++i) {
          if (summary_.hosts[i].host == host && summary_.hosts[i].port == port) index = i;
        }
        if (index == summary_.hosts.size()) {
          if (summary_.hosts.size() >= kEgressSummaryMaxEntries) return;  // counted no more
          summary_.hosts.push_back({host, port, 0, 0, 0});
        }
        ++summary_.hosts[index].connections;
        host_of_[mirror_id] = index;
      });
  dials_[dial] = mirror_id;
}

void RunEgress::OnReadable(uint32_t) {
  for (int i = 0; i < 64 && channel_.valid(); ++i) {
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
      auto it = host_of_.find(closed->id);
      if (it == host_of_.end()) continue;
      summary_.hosts[it->second].bytes_out += closed->bytes_out;
      summary_.hosts[it->second].bytes_in += closed->bytes_in;
      host_of_.erase(it);
    }
  }
}

}  // namespace skillmcp
