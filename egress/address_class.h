// Which addresses the helper connects to without the request's allow-local flag: the
// classification is pure, so the table in tests/unit/egress/ holds every rule.
#pragma once

#include <array>
#include <cstdint>

namespace skillmcp::egress {

enum class AddressClass {
  kGlobal,       // anything else, private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) too
  kUnspecified,  // 0.0.0.0, ::
  kThisNetwork,  // 0.0.0.0/8 besides 0.0.0.0
  kLoopback,     // 127/8, ::1
  kLinkLocal,    // 169.254/16 (cloud metadata services), fe80::/10
  kMulticast,    // 224/4, ff00::/8
  kBroadcast,    // 255.255.255.255
};

// The class of `address` (IPv4 in the first 4 bytes when `family` is AF_INET). An IPv6
// address that carries an IPv4 one (::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::a.b.c.d) has the
// class of the IPv4 address. A family other than AF_INET or AF_INET6 is kUnspecified.
AddressClass ClassifyAddress(uint8_t family, const std::array<uint8_t, 16>& address);

// A short name of the class, for the log.
const char* AddressClassName(AddressClass c);

}  // namespace skillmcp::egress
