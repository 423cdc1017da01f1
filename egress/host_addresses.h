// The addresses assigned to the helper host's own interfaces: a declared name whose DNS
// points at one of them (the host's LAN address, say) would reach the host's own services,
// so the helper refuses them like loopback (address_class.h, kHostOwn). Interfaces come and
// go, so the set is read again, at most once a second.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "egress/address_class.h"

namespace skillmcp::egress {

// How long one reading of the host's addresses is used before it is read again.
inline constexpr int64_t kHostAddressesRefreshMs = 1000;

// Every address getifaddrs reports (IPv4 and IPv6); nothing when it fails (errno set).
std::optional<HostAddresses> ReadHostAddresses();

class HostAddressCache {
 public:
  using Reader = std::function<std::optional<HostAddresses>()>;
  explicit HostAddressCache(Reader reader = ReadHostAddresses) : reader_(std::move(reader)) {}

  // The host's addresses, read at most kHostAddressesRefreshMs before `now_ms`; null when
  // the last reading failed, and the caller then refuses what it would have checked.
  std::shared_ptr<const HostAddresses> Get(int64_t now_ms);

 private:
  Reader reader_;
  std::shared_ptr<const HostAddresses> current_;
  std::optional<int64_t> read_at_ms_;
};

}  // namespace skillmcp::egress
