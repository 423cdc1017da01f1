#include "worker/egress_refuse.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "worker/net_order.h"

namespace skillmcp::worker {
namespace {

constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoIcmpV6 = 58;
constexpr uint8_t kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpAck = 0x10;
constexpr size_t kIpv4Header = 20;
constexpr size_t kIpv6Header = 40;
constexpr size_t kTcpHeader = 20;
constexpr size_t kUdpHeader = 8;
constexpr uint8_t kTtl = 64;
// RFC 4443 2.4(c): an ICMPv6 error carries as much of the packet as fits in the minimum
// MTU; RFC 1812 4.3.2.3 allows the same for ICMP within 576 bytes.
constexpr size_t kIcmpV6Max = 1280;
constexpr size_t kIcmpV4Max = 576;

// The Internet checksum's running sum (RFC 1071) over `bytes`, added to `sum`.
uint32_t SumBytes(std::span<const uint8_t> bytes, uint32_t sum) {
  size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += static_cast<uint32_t>(bytes[i] << 8 | bytes[i + 1]);
  if (i < bytes.size()) sum += static_cast<uint32_t>(bytes[i] << 8);
  return sum;
}

uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

std::string AddressText(int family, std::span<const uint8_t> bytes) {
  char out[INET6_ADDRSTRLEN];
  if (!inet_ntop(family, bytes.data(), out, sizeof out)) return {};
  return out;
}

// The pseudo-header's sum for a TCP, UDP or ICMPv6 checksum.
uint32_t PseudoSum(bool v6, std::span<const uint8_t> src, std::span<const uint8_t> dst,
                   uint8_t proto, size_t length) {
  uint32_t sum = SumBytes(src, 0);
  sum = SumBytes(dst, sum);
  sum += proto;
  sum += static_cast<uint32_t>(length & 0xffff);
  if (v6) sum += static_cast<uint32_t>(length >> 16);
  return sum;
}

// The IP header of a reply: from the packet's destination to its source.
std::vector<uint8_t> ReplyIpHeader(bool v6, std::span<const uint8_t> src,
                                   std::span<const uint8_t> dst, uint8_t proto, size_t payload) {
  std::vector<uint8_t> out(v6 ? kIpv6Header : kIpv4Header, 0);
  if (v6) {
    out[0] = 0x60;
    Write16(&out, 4, static_cast<uint16_t>(payload));
    out[6] = proto;
    out[7] = kTtl;
    std::copy(dst.begin(), dst.end(), out.begin() + 8);
    std::copy(src.begin(), src.end(), out.begin() + 24);
  } else {
    out[0] = 0x45;
    Write16(&out, 2, static_cast<uint16_t>(kIpv4Header + payload));
    out[6] = 0x40;  // don't fragment
    out[8] = kTtl;
    out[9] = proto;
    std::copy(dst.begin(), dst.end(), out.begin() + 12);
    std::copy(src.begin(), src.end(), out.begin() + 16);
    Write16(&out, 10, Fold(SumBytes(out, 0)));
  }
  return out;
}

struct Ip {
  bool v6 = false;
  uint8_t proto = 0;
  std::span<const uint8_t> src, dst;
  std::span<const uint8_t> whole;    // the packet up to its stated length
  std::span<const uint8_t> payload;  // after the IP header
};

std::optional<Ip> ParseIp(std::span<const uint8_t> p) {
  if (p.empty()) return std::nullopt;
  Ip ip;
  if ((p[0] >> 4) == 4) {
    if (p.size() < kIpv4Header) return std::nullopt;
    const size_t ihl = static_cast<size_t>(p[0] & 0x0f) * 4;
    const size_t total = Read16(p, 2);
    if (ihl < kIpv4Header || total < ihl || total > p.size()) return std::nullopt;
    if (Fold(SumBytes(p.first(ihl), 0)) != 0) return std::nullopt;
    if ((Read16(p, 6) & 0x1fff) != 0) return std::nullopt;  // a later fragment
    ip.proto = p[9];
    ip.src = p.subspan(12, 4);
    ip.dst = p.subspan(16, 4);
    ip.whole = p.first(total);
    ip.payload = p.subspan(ihl, total - ihl);
    return ip;
  }
  if ((p[0] >> 4) == 6) {
    if (p.size() < kIpv6Header) return std::nullopt;
    const size_t length = Read16(p, 4);
    if (kIpv6Header + length > p.size()) return std::nullopt;
    ip.v6 = true;
    ip.proto = p[6];  // an extension header is not TCP or UDP: no answer
    ip.src = p.subspan(8, 16);
    ip.dst = p.subspan(24, 16);
    ip.whole = p.first(kIpv6Header + length);
    ip.payload = p.subspan(kIpv6Header, length);
    return ip;
  }
  return std::nullopt;
}

Refusal RefuseTcp(const Ip& ip) {
  Refusal r;
  const std::span<const uint8_t> tcp = ip.payload;
  if (tcp.size() < kTcpHeader) return r;
  const size_t offset = static_cast<size_t>(tcp[12] >> 4) * 4;
  if (offset < kTcpHeader || offset > tcp.size()) return r;
  const uint8_t flags = tcp[13];
  if (flags & kTcpRst) return r;
  // RFC 9293 3.10.7.1: to a segment with ACK, a reset with its acknowledgment number as
  // sequence; otherwise a reset acknowledging everything the segment occupied.
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint8_t reply_flags = kTcpRst;
  if (flags & kTcpAck) {
    seq = Read32(tcp, 8);
  } else {
    const size_t data = tcp.size() - offset;
    ack = Read32(tcp, 4) + static_cast<uint32_t>(data) + ((flags & kTcpSyn) ? 1 : 0) +
          ((flags & kTcpFin) ? 1 : 0);
    reply_flags |= kTcpAck;
  }
  std::vector<uint8_t> seg(kTcpHeader, 0);
  Write16(&seg, 0, Read16(tcp, 2));
  Write16(&seg, 2, Read16(tcp, 0));
  Write32(&seg, 4, seq);
  Write32(&seg, 8, ack);
  seg[12] = 5 << 4;
  seg[13] = reply_flags;
  Write16(&seg, 16, Fold(SumBytes(seg, PseudoSum(ip.v6, ip.dst, ip.src, kProtoTcp, seg.size()))));
  r.reply = ReplyIpHeader(ip.v6, ip.src, ip.dst, kProtoTcp, seg.size());
  r.reply.insert(r.reply.end(), seg.begin(), seg.end());
  if ((flags & kTcpSyn) && !(flags & kTcpAck)) {
    r.attempt =
        RefusedAttempt{"tcp", AddressText(ip.v6 ? AF_INET6 : AF_INET, ip.dst), Read16(tcp, 2)};
  }
  return r;
}

Refusal RefuseUdp(const Ip& ip) {
  Refusal r;
  if (ip.payload.size() < kUdpHeader) return r;
  const size_t limit = (ip.v6 ? kIcmpV6Max - kIpv6Header : kIcmpV4Max - kIpv4Header) - 8;
  const std::span<const uint8_t> quoted = ip.whole.first(std::min(ip.whole.size(), limit));
  std::vector<uint8_t> icmp(8, 0);
  icmp[0] = ip.v6 ? 1 : 3;  // destination unreachable
  icmp[1] = ip.v6 ? 4 : 3;  // port unreachable
  icmp.insert(icmp.end(), quoted.begin(), quoted.end());
  const uint32_t start = ip.v6 ? PseudoSum(true, ip.dst, ip.src, kProtoIcmpV6, icmp.size()) : 0;
  Write16(&icmp, 2, Fold(SumBytes(icmp, start)));
  r.reply = ReplyIpHeader(ip.v6, ip.src, ip.dst, ip.v6 ? kProtoIcmpV6 : kProtoIcmp, icmp.size());
  r.reply.insert(r.reply.end(), icmp.begin(), icmp.end());
  r.attempt =
      RefusedAttempt{"udp", AddressText(ip.v6 ? AF_INET6 : AF_INET, ip.dst), Read16(ip.payload, 2)};
  return r;
}

}  // namespace

Refusal RefusePacket(std::span<const uint8_t> packet) {
  std::optional<Ip> ip = ParseIp(packet);
  if (!ip) return {};
  if (ip->proto == kProtoTcp) return RefuseTcp(*ip);
  if (ip->proto == kProtoUdp) return RefuseUdp(*ip);
  return {};
}

}  // namespace skillmcp::worker
