// libFuzzer entry point for the egress helper's protocol (shared/egress_wire.h), a trust
// boundary both ways: the helper decodes whatever a process that reached its socket sends
// (DecodeEgressRequest, and PeekEgressRequestId, whose id answers a request malformed past
// its header with EINVAL), and the broker whatever the helper answers (TakeEgressAnswer,
// with the descriptor that came). Whatever the bytes, each must return; what is accepted
// must re-encode to exactly the input; a request names a host as the allowlist writes it
// (no wildcard, no second spelling) on a port above 0; an answer that came without a
// descriptor is taken exactly when it is a refusal, and one that came with a descriptor
// that is no connected TCP stream is never taken, and the descriptor is closed.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "shared/egress_allowlist.h"
#include "shared/egress_wire.h"

namespace {

using skillmcp::kEgressAnswerBytes;
using skillmcp::UniqueFd;

uint32_t LittleEndianU32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

void CheckRequest(std::string_view bytes) {
  const auto id = skillmcp::PeekEgressRequestId(bytes);
  if (id && (bytes.size() < 12 || bytes.substr(0, 4) != "SMEQ" ||
             LittleEndianU32(bytes, 4) != skillmcp::kEgressProtocolVersion ||
             LittleEndianU32(bytes, 8) != *id))
    std::abort();
  const auto request = skillmcp::DecodeEgressRequest(bytes);
  if (!request) return;
  if (!id || *id != request->id || bytes.size() > skillmcp::kEgressRequestMaxBytes) std::abort();
  if (request->port == 0) std::abort();
  if (skillmcp::NormaliseEgressHost(request->host, /*wildcard=*/false) != request->host)
    std::abort();
  const auto again = skillmcp::EncodeEgressRequest(*request);
  if (!again || *again != bytes) std::abort();
}

void CheckAnswer(std::string_view bytes) {
  const auto answer = skillmcp::DecodeEgressAnswer(bytes);
  if (answer) {
    char out[kEgressAnswerBytes];
    if (!skillmcp::EncodeEgressAnswer(*answer, out)) std::abort();
    if (std::string_view(out, sizeof out) != bytes) std::abort();
    if (answer->error == 0 && answer->family == 0) std::abort();
  }
  UniqueFd none;
  if (skillmcp::TakeEgressAnswer(bytes, none).has_value() != (answer && answer->error != 0))
    std::abort();
  // A unix socket is not a connection the relay may splice, whatever the answer says.
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) std::abort();
  UniqueFd unix_end(pair[0]), other_end(pair[1]);
  if (skillmcp::TakeEgressAnswer(bytes, unix_end).has_value() || unix_end.valid()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckRequest(bytes);
  CheckAnswer(bytes);
  return 0;
}
