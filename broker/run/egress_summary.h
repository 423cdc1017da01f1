// What the receipt says of a run's network in the declared mode (broker/run/run_egress.h
// gathers it): the hosts reached and the attempts refused, each list bounded and what it
// leaves out counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace skillmcp {

inline constexpr size_t kEgressSummaryMaxEntries = 32;

// What the receipt says of a run's network.
struct EgressSummary {
  struct Host {
    std::string host;
    uint16_t port = 0;
    uint32_t connections = 0;
    uint64_t bytes_out = 0;  // run -> host
    uint64_t bytes_in = 0;   // host -> run
    bool operator==(const Host&) const = default;
  };
  struct Refusal {
    // "dns" (a name not declared), "tcp" / "udp" (an address or port outside the list,
    // refused in the run's namespace), "connect" (a declared host the helper could not
    // reach: `reason` says why), "policy" (asked for outside the rules).
    std::string kind;
    std::string target;
    uint16_t port = 0;
    std::string reason;
    bool operator==(const Refusal&) const = default;
  };
  // The hosts reached past kEgressSummaryMaxEntries, counted together: how many, and
  // their connections and bytes.
  struct Omitted {
    uint32_t hosts = 0;
    uint32_t connections = 0;
    uint64_t bytes_out = 0;
    uint64_t bytes_in = 0;
    bool operator==(const Omitted&) const = default;
  };
  std::vector<Host> hosts;  // in the order first reached
  Omitted hosts_omitted;
  std::vector<Refusal> refused;
  uint32_t refused_omitted = 0;  // refusals beyond kEgressSummaryMaxEntries
  bool operator==(const EgressSummary&) const = default;
};

}  // namespace skillmcp
