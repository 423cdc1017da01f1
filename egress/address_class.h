// Which addresses the helper connects to without the request's allow-local flag: the
// classification is pure (the host's own addresses come in as a parameter), so the table
// in tests/unit/egress/ holds every rule.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <set>

namespace skillmcp::egress {

enum class AddressClass {
  kGlobal,         // anything else, private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) too
  kUnspecified,    // 0.0.0.0, ::
  kThisNetwork,    // 0.0.0.0/8 besides 0.0.0.0
  kLoopback,       // 127/8, ::1
  kLinkLocal,      // 169.254/16 (cloud metadata services), fe80::/10
  kSharedSpace,    // 100.64/10 (carrier-grade NAT, and cloud services behind it)
  kIetfProtocol,   // 192.0.0.0/24 (protocol assignments, some clouds' metadata)
  kCloudMetadata,  // one of the metadata addresses outside those ranges (address_class.cc)
  kMulticast,      // 224/4, ff00::/8
  kBroadcast,      // 255.255.255.255
  kHostOwn,        // assigned to one of the helper host's own interfaces
};

// One IP address: IPv4 in the first 4 bytes (the rest zero) when `family` is AF_INET.
struct IpAddress {
  uint8_t family = 0;
  std::array<uint8_t, 16> bytes{};
  auto operator<=>(const IpAddress&) const = default;
};

// The addresses of the helper host's interfaces (host_addresses.h reads them).
using HostAddresses = std::set<IpAddress>;

// The class of `address` (IPv4 in the first 4 bytes when `family` is AF_INET), `host`
// being the host's own addresses. An IPv6 address that carries an IPv4 one (::ffff:a.b.c.d,
// ::a.b.c.d, 64:ff9b::a.b.c.d) has the class of the IPv4 address. A family other than
// AF_INET or AF_INET6 is kUnspecified.
AddressClass ClassifyAddress(uint8_t family, const std::array<uint8_t, 16>& address,
                             const HostAddresses& host);

// Whether `c` may be a cloud's metadata service: link-local (169.254.169.254, fe80::),
// the metadata addresses outside it, and 192.0.0.0/24.
bool IsMetadataService(AddressClass c);

// A short name of the class, for the log.
const char* AddressClassName(AddressClass c);

}  // namespace skillmcp::egress
