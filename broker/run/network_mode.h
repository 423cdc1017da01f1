// What a run's network is (docs/isolation.md, "Network"): SKILL_MCP_NETWORK and the
// declared mode's settings, read once at boot, and how the mode settles once the boot
// probe has said whether runs get namespaces.
//   declared (the default): each run gets a network namespace of its own and reaches only
//     the hosts its skill declares, narrowed by the operator (shared/egress_allowlist.h),
//     through the egress helper (broker/run/egress_client.h); where runs get no
//     namespaces it falls back to off, never to on;
//   off: a seccomp fence refuses every IPv4 and IPv6 socket, and Landlock every TCP
//     connect and bind where its ABI has them;
//   on: the host's network as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/harden/env_store.h"
#include "shared/egress_allowlist.h"

namespace skillmcp {

struct LaunchConfig;

enum class NetworkMode : uint8_t { kDeclared, kOn, kOff };

// "declared", "on", "off".
const char* NetworkModeName(NetworkMode mode);

struct EgressSettings {
  // SKILL_MCP_EGRESS_ALLOW: nothing when unset (every declared host allowed), an empty
  // list for "none".
  std::optional<std::vector<EgressPattern>> patterns;
  bool allow_local = false;  // SKILL_MCP_EGRESS_LOCAL=on
  // SKILL_MCP_EGRESS_RESOLVE: a name the helper connects to this address for, without
  // asking the resolver (normalised host, address literal), in the order given.
  std::vector<std::pair<std::string, std::string>> pins;
  // SKILL_MCP_EGRESS_SOCKET: the socket-activated helper's socket; empty: the broker
  // starts the helper itself (helper_path).
  std::string socket_path;
  std::string helper_path;  // SKILL_MCP_EGRESS_HELPER, the build tree's, or libexec's
};

// The address `host` is pinned to, or nullptr.
const std::string* EgressPin(const EgressSettings& settings, const std::string& host);

// Reads SKILL_MCP_NETWORK and the SKILL_MCP_EGRESS_* settings into `c` (network_mode,
// egress). "" or the boot error. `self_dir`: the broker binary's directory, where a build
// tree keeps the helper at ../egress/skill-mcp-egress.
std::string ResolveNetwork(const EnvStore& env, const std::string& self_dir, LaunchConfig& c);

// Settles the effective mode from what is known of the namespaces: declared where runs
// get them (or the probe is still deciding), else off with network_fallback saying why.
// Called at boot and again when the probe decides (DecideNamespaces).
void SettleNetwork(LaunchConfig& c);

// Why runs are refused for the network setting (off cannot hold here), or "".
std::string NetworkRefusal(const LaunchConfig& c);

// What skill_run needs to fix a run's allowlist: whether runs are in the declared mode
// (settled) and the operator's patterns.
struct EgressPolicy {
  bool declared = false;
  std::optional<std::vector<EgressPattern>> patterns;
};
EgressPolicy EgressPolicyOf(const LaunchConfig& c);

// The run's allowlist: its skill's declared hosts narrowed by the operator's patterns,
// without IP literals (a run reaches names only) and without a wildcard over a public
// suffix ("*.github.io") that no pattern of the operator's names; nothing unless the mode
// is declared.
std::optional<std::vector<EgressRule>> RunEgressRules(const EgressPolicy& policy,
                                                      const std::vector<std::string>& declared);

// Why a run held to `rules` (RunEgressRules) may not connect to `name` (normalised) on
// `port`, or "" when it may: a rule must allow it, and a wildcard reaches no name that is,
// or lies under, a public suffix below the wildcard's base ("*.amazonaws.com" does not
// reach "bucket.s3.amazonaws.com", someone else's) unless a pattern of the operator's
// names that very wildcard.
std::string RunConnectRefusal(const std::vector<EgressRule>& rules,
                              const std::optional<std::vector<EgressPattern>>& patterns,
                              std::string_view name, uint16_t port);

// Why a run cannot be held to `rules`, or "": more hosts, or more ports for one host, than
// a run's description carries (kRunSpecMaxEgressRules, kRunSpecMaxEgressPorts), with what
// the operator can do about it.
std::string EgressRulesRefusal(const std::vector<EgressRule>& rules);

}  // namespace skillmcp
