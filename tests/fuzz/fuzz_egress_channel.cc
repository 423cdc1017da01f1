// libFuzzer entry point for the declared network mode's channel between a run's mirror
// and its broker (shared/egress_channel.h), a trust boundary both ways: the broker decodes
// whatever the mirror, running as the run's user, sends (DecodeEgressFromMirror), and the
// mirror whatever arrives on its end (DecodeEgressToMirror). Whatever the bytes, both must
// return; what they accept must be canonical (encoding it again gives back exactly the
// input, never more than one frame), of one direction only, and in range: a host of the
// characters the broker compares with its allowlist, a kind it knows, a port where one is
// needed, an errno the mirror can close a socket with, an untold count of at least one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "shared/egress_channel.h"
#include "shared/worker_wire.h"

namespace {

using skillmcp::EgressConnect;
using skillmcp::EgressDenied;
using skillmcp::EgressRefused;
using skillmcp::EgressRefusedUntold;

bool IsChannelHost(std::string_view host) {
  if (host.empty() || host.size() > skillmcp::kEgressHostMaxBytes) return false;
  for (char c : host)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':'))
      return false;
  return true;
}

void CheckFromMirror(const skillmcp::EgressFromMirror& m, std::string_view bytes) {
  const auto again = skillmcp::EncodeEgressFromMirror(m);
  if (!again || *again != bytes) std::abort();
  if (const auto* c = std::get_if<EgressConnect>(&m)) {
    if (!IsChannelHost(c->host) || c->port == 0) std::abort();
  } else if (const auto* r = std::get_if<EgressRefused>(&m)) {
    if (r->kind != "dns" && r->kind != "tcp" && r->kind != "udp") std::abort();
    if (!IsChannelHost(r->target) || (r->kind == "dns" && r->port != 0)) std::abort();
  } else if (const auto* u = std::get_if<EgressRefusedUntold>(&m)) {
    if (u->count == 0) std::abort();
  }
}

void CheckToMirror(const skillmcp::EgressToMirror& m, std::string_view bytes) {
  const auto again = skillmcp::EncodeEgressToMirror(m);
  if (!again || *again != bytes) std::abort();
  if (const auto* d = std::get_if<EgressDenied>(&m))
    if (d->err < 1 || d->err > skillmcp::wire::kMaxErrno) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto from = skillmcp::DecodeEgressFromMirror(bytes);
  const auto to = skillmcp::DecodeEgressToMirror(bytes);
  if (from && to) std::abort();
  if ((from || to) && size > skillmcp::kEgressFrameMaxBytes) std::abort();
  if (from) CheckFromMirror(*from, bytes);
  if (to) CheckToMirror(*to, bytes);
  return 0;
}
