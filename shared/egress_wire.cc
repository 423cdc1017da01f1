#include "shared/egress_wire.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>

#include "shared/egress_allowlist.h"
#include "shared/worker_wire.h"

namespace skillmcp {
namespace {

using wire::PutU16;
using wire::PutU32;
using wire::PutU32At;
using wire::PutU8;
using wire::Reader;

constexpr char kRequestMagic[4] = {'S', 'M', 'E', 'Q'};
constexpr char kAnswerMagic[4] = {'S', 'M', 'E', 'A'};

// why: only names the broker's allowlist could hold reach the resolver; anything else
// (a wildcard, a trailing dot, upper case, a scoped IPv6 address) is a broker bug, not a
// second spelling to resolve.
bool IsRequestHost(std::string_view host) {
  const std::optional<std::string> normal = NormaliseEgressHost(host, /*wildcard=*/false);
  return normal && *normal == host;
}

bool IsValid(const EgressRequest& request) {
  return request.port != 0 && IsRequestHost(request.host);
}

size_t AddressBytes(uint8_t family) {
  switch (family) {
    case AF_INET:
      return 4;
    case AF_INET6:
      return 16;
    default:
      return 0;
  }
}

bool IsValid(const EgressAnswer& answer) {
  if (answer.error < 0 || answer.error > wire::kMaxErrno) return false;
  if (answer.family != 0 && answer.family != AF_INET && answer.family != AF_INET6) return false;
  // A connected socket always has a peer; a refusal may have tried none.
  if (answer.error == 0 && answer.family == 0) return false;
  if ((answer.family == 0) != (answer.port == 0)) return false;
  const size_t used = AddressBytes(answer.family);
  return std::all_of(answer.address.begin() + used, answer.address.end(),
                     [](uint8_t b) { return b == 0; });
}

}  // namespace

std::optional<std::string> EncodeEgressRequest(const EgressRequest& request) {
  if (!IsValid(request)) return std::nullopt;
  std::string out(kRequestMagic, 4);
  PutU32(out, kEgressProtocolVersion);
  PutU32(out, request.id);
  PutU16(out, request.port);
  PutU8(out, request.allow_local ? kEgressAllowLocal : 0);
  PutU16(out, static_cast<uint16_t>(request.host.size()));
  out.append(request.host);
  return out;
}

std::optional<uint32_t> PeekEgressRequestId(std::string_view bytes) {
  Reader r(bytes);
  uint32_t version = 0, id = 0;
  if (!r.Magic(kRequestMagic) || !r.U32(version) || version != kEgressProtocolVersion)
    return std::nullopt;
  if (!r.U32(id)) return std::nullopt;
  return id;
}

std::optional<EgressRequest> DecodeEgressRequest(std::string_view bytes) {
  if (bytes.size() > kEgressRequestMaxBytes) return std::nullopt;
  const std::optional<uint32_t> id = PeekEgressRequestId(bytes);
  if (!id) return std::nullopt;
  Reader r(bytes.substr(12));
  EgressRequest request;
  request.id = *id;
  uint8_t flags = 0;
  uint16_t host_len = 0;
  if (!r.U16(request.port) || !r.U8(flags) || !r.U16(host_len)) return std::nullopt;
  // why: an unknown bit is a request this helper does not understand; honouring it as 0
  // could connect where the broker meant something narrower.
  if ((flags & ~kEgressAllowLocal) != 0) return std::nullopt;
  request.allow_local = (flags & kEgressAllowLocal) != 0;
  if (!r.Bytes(host_len, request.host) || !r.AtEnd()) return std::nullopt;
  if (!IsValid(request)) return std::nullopt;
  return request;
}

bool EncodeEgressAnswer(const EgressAnswer& answer, char (&out)[kEgressAnswerBytes]) {
  if (!IsValid(answer)) return false;
  for (int i = 0; i < 4; ++i) out[i] = kAnswerMagic[i];
  PutU32At(out + 4, kEgressProtocolVersion);
  PutU32At(out + 8, answer.id);
  PutU32At(out + 12, static_cast<uint32_t>(answer.error));
  out[16] = static_cast<char>(answer.family);
  std::copy(answer.address.begin(), answer.address.end(), out + 17);
  out[33] = static_cast<char>(answer.port & 0xff);
  out[34] = static_cast<char>(answer.port >> 8);
  return true;
}

std::optional<EgressAnswer> DecodeEgressAnswer(std::string_view bytes) {
  if (bytes.size() != kEgressAnswerBytes) return std::nullopt;
  Reader r(bytes);
  EgressAnswer answer;
  uint32_t version = 0, error = 0;
  std::string address;
  if (!r.Magic(kAnswerMagic) || !r.U32(version) || version != kEgressProtocolVersion)
    return std::nullopt;
  if (!r.U32(answer.id) || !r.U32(error) || !r.U8(answer.family) || !r.Bytes(16, address) ||
      !r.U16(answer.port) || !r.AtEnd())
    return std::nullopt;
  answer.error = static_cast<int32_t>(error);
  std::copy(address.begin(), address.end(), answer.address.begin());
  if (!IsValid(answer)) return std::nullopt;
  return answer;
}

std::optional<EgressAnswer> TakeEgressAnswer(std::string_view bytes, UniqueFd& fd) {
  std::optional<EgressAnswer> answer = DecodeEgressAnswer(bytes);
  struct stat st;
  // why more than a socket: what the relay splices must be a connected TCP stream of
  // IPv4 or IPv6, never a listener, a datagram or a unix socket a helper might hand on.
  auto int_option = [&fd](int name) {
    int v = -1;
    socklen_t len = sizeof v;
    return getsockopt(fd.get(), SOL_SOCKET, name, &v, &len) == 0 ? v : -1;
  };
  const bool socket = fd && fstat(fd.get(), &st) == 0 && S_ISSOCK(st.st_mode) &&
                      (int_option(SO_DOMAIN) == AF_INET || int_option(SO_DOMAIN) == AF_INET6) &&
                      int_option(SO_TYPE) == SOCK_STREAM && int_option(SO_ACCEPTCONN) == 0;
  // why: a connection is handed on to a run's relay only as the socket the helper
  // connected; a refusal that carries a descriptor, or a success without one, is not an
  // answer of this protocol.
  if (!answer || (answer->error == 0) != socket || (answer->error != 0 && fd)) {
    fd.reset();
    return std::nullopt;
  }
  return answer;
}

}  // namespace skillmcp
