#include "worker/egress_dns.h"

#include <cstring>

#include "worker/net_order.h"

namespace skillmcp::worker {
namespace {

constexpr size_t kHeaderSize = 12;
constexpr size_t kMaxName = 253;
constexpr size_t kMaxLabel = 63;
constexpr uint16_t kTypeA = 1;
constexpr uint16_t kClassIn = 1;
constexpr uint8_t kRcodeFormErr = 1;
constexpr uint8_t kRcodeNxDomain = 3;
constexpr uint8_t kRcodeNotImp = 4;

// The header of a reply to `query`: its id, QR set, its opcode and RD, RA set, `rcode`.
std::vector<uint8_t> ReplyHeader(std::span<const uint8_t> query, uint8_t rcode, uint16_t qdcount,
                                 uint16_t ancount) {
  std::vector<uint8_t> out;
  out.reserve(64);
  out.push_back(query[0]);
  out.push_back(query[1]);
  const uint8_t opcode_rd = query[2] & 0x79;  // opcode (bits 3-6) and RD (bit 0)
  out.push_back(static_cast<uint8_t>(0x80 | opcode_rd));
  out.push_back(static_cast<uint8_t>(0x80 | (rcode & 0x0f)));  // RA, rcode
  Append16(&out, qdcount);
  Append16(&out, ancount);
  Append16(&out, 0);
  Append16(&out, 0);
  return out;
}

}  // namespace

std::optional<DnsQuestion> ParseDnsQuery(std::span<const uint8_t> m) {
  if (m.size() < kHeaderSize) return std::nullopt;
  if (m[2] & 0x80) return std::nullopt;                // a response
  if (((m[2] >> 3) & 0x0f) != 0) return std::nullopt;  // not a standard query
  if (Read16(m, 4) != 1) return std::nullopt;          // exactly one question
  DnsQuestion q;
  q.id = Read16(m, 0);
  size_t at = kHeaderSize;
  for (;;) {
    if (at >= m.size()) return std::nullopt;
    const uint8_t len = m[at++];
    if (len == 0) break;
    if (len > kMaxLabel) return std::nullopt;  // a pointer or a reserved label type
    if (m.size() - at < len) return std::nullopt;
    if (!q.name.empty()) q.name.push_back('.');
    for (size_t i = 0; i < len; ++i) {
      char c = static_cast<char>(m[at + i]);
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      q.name.push_back(c);
    }
    if (q.name.size() > kMaxName) return std::nullopt;
    at += len;
  }
  if (m.size() - at < 4) return std::nullopt;
  q.type = Read16(m, at);
  q.qclass = Read16(m, at + 2);
  return q;
}

std::optional<std::vector<uint8_t>> AnswerDnsQuery(std::span<const uint8_t> m,
                                                   const AllotAddress& allot) {
  if (m.size() < kHeaderSize || (m[2] & 0x80)) return std::nullopt;
  if (((m[2] >> 3) & 0x0f) != 0) return ReplyHeader(m, kRcodeNotImp, 0, 0);
  std::optional<DnsQuestion> q = ParseDnsQuery(m);
  if (!q) return ReplyHeader(m, kRcodeFormErr, 0, 0);
  // The question as received: from the end of the header to the end of its class.
  size_t question_end = kHeaderSize;
  while (m[question_end] != 0) question_end += 1 + m[question_end];
  question_end += 1 + 4;
  const std::span<const uint8_t> question = m.subspan(kHeaderSize, question_end - kHeaderSize);

  std::optional<in_addr> address;
  // why: a name with characters no host name has is never on an allowlist; it is not
  // even offered to the allotment.
  bool plain = !q->name.empty();
  for (char c : q->name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) plain = false;
  }
  if (plain) address = allot(q->name);
  if (!address) {
    std::vector<uint8_t> out = ReplyHeader(m, kRcodeNxDomain, 1, 0);
    out.insert(out.end(), question.begin(), question.end());
    return out;
  }
  const bool answer = q->type == kTypeA && q->qclass == kClassIn;
  std::vector<uint8_t> out = ReplyHeader(m, 0, 1, answer ? 1 : 0);
  out.insert(out.end(), question.begin(), question.end());
  if (answer) {
    Append16(&out, 0xc000 | kHeaderSize);  // the name: a pointer to the question's
    Append16(&out, kTypeA);
    Append16(&out, kClassIn);
    Append32(&out, kEgressDnsTtl);
    Append16(&out, 4);
    uint8_t bytes[4];
    std::memcpy(bytes, &address->s_addr, 4);  // network order already
    out.insert(out.end(), bytes, bytes + 4);
  }
  return out;
}

}  // namespace skillmcp::worker
