#include "egress/address_class.h"

#include <sys/socket.h>

#include <algorithm>

namespace skillmcp::egress {
namespace {

// why each class is refused by default: a declared name the run cannot choose can still
// be pointed (by its DNS owner, or by rebinding) at the helper's own host or its link;
// loopback reaches the host's local services, link-local the cloud metadata service
// (169.254.169.254, which hands out credentials), 0.0.0.0/8 and :: reach loopback on
// Linux, and multicast and broadcast reach every host on the link. Private ranges stay
// allowed: they are where an operator's internal APIs live, and the operator narrows
// names, not addresses.
AddressClass ClassifyV4(const uint8_t* a) {
  if (a[0] == 0) {
    return (a[1] | a[2] | a[3]) == 0 ? AddressClass::kUnspecified : AddressClass::kThisNetwork;
  }
  if (a[0] == 127) return AddressClass::kLoopback;
  if (a[0] == 169 && a[1] == 254) return AddressClass::kLinkLocal;
  if ((a[0] & 0xf0) == 224) return AddressClass::kMulticast;
  if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255) return AddressClass::kBroadcast;
  return AddressClass::kGlobal;
}

bool AllZero(const uint8_t* a, int n) {
  return std::all_of(a, a + n, [](uint8_t b) { return b == 0; });
}

AddressClass ClassifyV6(const uint8_t* a) {
  // why: an address that carries an IPv4 one reaches that IPv4 address (a dual-stack
  // socket connects ::ffff:127.0.0.1 to 127.0.0.1, a NAT64 gateway 64:ff9b::7f00:1 to it),
  // so it is what it carries.
  if (AllZero(a, 10) && a[10] == 0xff && a[11] == 0xff) return ClassifyV4(a + 12);  // mapped
  constexpr uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b};                          // 64:ff9b::/96
  if (std::equal(a, a + 12, kNat64)) return ClassifyV4(a + 12);
  if (AllZero(a, 12)) {
    if (AllZero(a + 12, 4)) return AddressClass::kUnspecified;
    if (AllZero(a + 12, 3) && a[15] == 1) return AddressClass::kLoopback;
    return ClassifyV4(a + 12);  // IPv4-compatible ::a.b.c.d
  }
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;
  if (a[0] == 0xff) return AddressClass::kMulticast;
  return AddressClass::kGlobal;
}

}  // namespace

AddressClass ClassifyAddress(uint8_t family, const std::array<uint8_t, 16>& address) {
  if (family == AF_INET) return ClassifyV4(address.data());
  if (family == AF_INET6) return ClassifyV6(address.data());
  return AddressClass::kUnspecified;
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
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
  }
  return "?";
}

}  // namespace skillmcp::egress
