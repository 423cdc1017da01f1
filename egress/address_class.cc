#include "egress/address_class.h"

#include <sys/socket.h>

#include <algorithm>

namespace skillmcp::egress {
namespace {

struct MetadataAddress {
  IpAddress address;
  const char* why;
};

// why each: a cloud's metadata service hands the instance's credentials (or its agent's
// configuration) to whoever asks from the instance, and these sit outside the ranges
// refused below (169.254.169.254 is link-local already).
const MetadataAddress kCloudMetadata[] = {
    {{AF_INET6, {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}},
     "AWS instance metadata over IPv6 (fd00:ec2::254), inside fc00::/7 that stays reachable"},
    {{AF_INET6, {0xfd, 0x20, 0x00, 0xce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}},
     "Google Cloud metadata server over IPv6 (fd20:ce::254), service-account tokens"},
    {{AF_INET, {100, 100, 100, 200}}, "Alibaba Cloud metadata service, RAM role credentials"},
    {{AF_INET, {168, 63, 129, 16}}, "Azure WireServer, the VM agent's configuration"},
};

bool IsCloudMetadata(const IpAddress& a) {
  return std::any_of(std::begin(kCloudMetadata), std::end(kCloudMetadata),
                     [&](const MetadataAddress& m) { return m.address == a; });
}

// why each class is refused by default: a declared name the run cannot choose can still
// be pointed (by its DNS owner, or by rebinding) at the helper's own host or its link;
// loopback and the host's own addresses reach the host's local services, link-local and
// the metadata addresses a cloud's metadata service, 0.0.0.0/8 and :: reach loopback on
// Linux, 100.64/10 and 192.0.0.0/24 the provider's own network (metadata services live
// there), and multicast and broadcast reach every host on the link. Private ranges stay
// allowed: they are where an operator's internal APIs live, and the operator narrows
// names, not addresses.
AddressClass ClassifyV4(const uint8_t* a, const HostAddresses& host) {
  IpAddress ip{AF_INET, {a[0], a[1], a[2], a[3]}};
  if (a[0] == 0) {
    return (a[1] | a[2] | a[3]) == 0 ? AddressClass::kUnspecified : AddressClass::kThisNetwork;
  }
  if (IsCloudMetadata(ip)) return AddressClass::kCloudMetadata;
  if (a[0] == 127) return AddressClass::kLoopback;
  if (a[0] == 169 && a[1] == 254) return AddressClass::kLinkLocal;
  if (a[0] == 100 && (a[1] & 0xc0) == 64) return AddressClass::kSharedSpace;
  if (a[0] == 192 && a[1] == 0 && a[2] == 0) return AddressClass::kIetfProtocol;
  if ((a[0] & 0xf0) == 224) return AddressClass::kMulticast;
  if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255) return AddressClass::kBroadcast;
  if (host.count(ip) != 0) return AddressClass::kHostOwn;
  return AddressClass::kGlobal;
}

bool AllZero(const uint8_t* a, int n) {
  return std::all_of(a, a + n, [](uint8_t b) { return b == 0; });
}

AddressClass ClassifyV6(const uint8_t* a, const HostAddresses& host) {
  // why: an address that carries an IPv4 one reaches that IPv4 address (a dual-stack
  // socket connects ::ffff:127.0.0.1 to 127.0.0.1, a NAT64 gateway 64:ff9b::7f00:1 to it),
  // so it is what it carries.
  if (AllZero(a, 10) && a[10] == 0xff && a[11] == 0xff) return ClassifyV4(a + 12, host);  // mapped
  constexpr uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b};  // 64:ff9b::/96
  if (std::equal(a, a + 12, kNat64)) return ClassifyV4(a + 12, host);
  if (AllZero(a, 12)) {
    if (AllZero(a + 12, 4)) return AddressClass::kUnspecified;
    if (AllZero(a + 12, 3) && a[15] == 1) return AddressClass::kLoopback;
    return ClassifyV4(a + 12, host);  // IPv4-compatible ::a.b.c.d
  }
  IpAddress ip{AF_INET6, {}};
  std::copy(a, a + 16, ip.bytes.begin());
  if (IsCloudMetadata(ip)) return AddressClass::kCloudMetadata;
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;
  if (a[0] == 0xff) return AddressClass::kMulticast;
  if (host.count(ip) != 0) return AddressClass::kHostOwn;
  return AddressClass::kGlobal;
}

}  // namespace

AddressClass ClassifyAddress(uint8_t family, const std::array<uint8_t, 16>& address,
                             const HostAddresses& host) {
  if (family == AF_INET) return ClassifyV4(address.data(), host);
  if (family == AF_INET6) return ClassifyV6(address.data(), host);
  return AddressClass::kUnspecified;
}

bool IsMetadataService(AddressClass c) {
  return c == AddressClass::kLinkLocal || c == AddressClass::kCloudMetadata ||
         c == AddressClass::kIetfProtocol;
}

const char* AddressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kGlobal:
      return "global";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kThisNetwork:
      return "this-network";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kSharedSpace:
      return "shared-address-space";
    case AddressClass::kIetfProtocol:
      return "ietf-protocol";
    case AddressClass::kCloudMetadata:
      return "cloud-metadata";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kHostOwn:
      return "host-own";
  }
  return "?";
}

}  // namespace skillmcp::egress
