#include "broker/run/network_mode.h"

#include <unistd.h>

#include <algorithm>

#include "broker/run/interpreters.h"
#include "broker/run/launch_config.h"
#include "broker/run/public_suffix.h"
#include "config.h"
#include "shared/small_file.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

// SKILL_MCP_EGRESS_RESOLVE: "host=address" entries, split as the allowlist is
// (EgressListEntries). "" or the error.
std::string ParsePins(std::string_view text,
                      std::vector<std::pair<std::string, std::string>>* pins) {
  for (std::string_view entry : EgressListEntries(text)) {
    const size_t eq = entry.find('=');
    const std::string shown(entry);
    if (eq == std::string_view::npos)
      return "SKILL_MCP_EGRESS_RESOLVE entry \"" + shown + "\" is not host=address";
    std::optional<std::string> host = NormaliseEgressHost(entry.substr(0, eq), false);
    std::optional<std::string> address = NormaliseEgressHost(entry.substr(eq + 1), false);
    if (!host || IsAddressLiteral(*host))
      return "SKILL_MCP_EGRESS_RESOLVE entry \"" + shown + "\" does not start with a host name";
    // why an address only: a pin that named another host would be resolved after all.
    if (!address || !IsAddressLiteral(*address))
      return "SKILL_MCP_EGRESS_RESOLVE entry \"" + shown + "\" does not end with an IP address";
    for (const auto& [h, a] : *pins)
      if (h == *host) return "SKILL_MCP_EGRESS_RESOLVE names \"" + *host + "\" twice";
    pins->emplace_back(*host, *address);
  }
  return "";
}

}  // namespace

const char* NetworkModeName(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kDeclared:
      return "declared";
    case NetworkMode::kOn:
      return "on";
    case NetworkMode::kOff:
      return "off";
  }
  return "?";
}

const std::string* EgressPin(const EgressSettings& settings, const std::string& host) {
  for (const auto& [h, a] : settings.pins)
    if (h == host) return &a;
  return nullptr;
}

std::string ResolveNetwork(const EnvStore& env, const std::string& self_dir, LaunchConfig& c) {
  const std::string net = env.GetConfig("SKILL_MCP_NETWORK").value_or("declared");
  if (net == "declared") {
    c.network_mode = NetworkMode::kDeclared;
  } else if (net == "on") {
    c.network_mode = NetworkMode::kOn;
  } else if (net == "off") {
    c.network_mode = NetworkMode::kOff;
  } else {
    return "SKILL_MCP_NETWORK=\"" + net + "\" is none of declared, on, off";
  }
  EgressSettings& e = c.egress;
  std::optional<std::string> allow = env.GetConfig("SKILL_MCP_EGRESS_ALLOW");
  // why a word: a blank value counts as unset (docs/configuration.md), so "no host at all"
  // needs one of its own.
  if (allow && *allow == "none") {
    e.patterns.emplace();
  } else if (allow) {
    std::string error;
    e.patterns = ParseEgressPatterns(*allow, &error);
    // why: a mistyped allowlist must stop the boot, never widen or empty it silently.
    if (!e.patterns) return "SKILL_MCP_EGRESS_ALLOW: " + error;
  }
  const std::string local = env.GetConfig("SKILL_MCP_EGRESS_LOCAL").value_or("off");
  if (local != "on" && local != "off")
    return "SKILL_MCP_EGRESS_LOCAL=\"" + local + "\" is neither on nor off";
  e.allow_local = local == "on";
  if (std::optional<std::string> pins = env.GetConfig("SKILL_MCP_EGRESS_RESOLVE"))
    if (std::string error = ParsePins(*pins, &e.pins); !error.empty()) return error;
  e.socket_path = env.GetConfig("SKILL_MCP_EGRESS_SOCKET").value_or("");
  if (!e.socket_path.empty() && e.socket_path[0] != '/')
    return "SKILL_MCP_EGRESS_SOCKET=\"" + e.socket_path + "\" is not an absolute path";
  if (std::optional<std::string> helper = env.GetConfig("SKILL_MCP_EGRESS_HELPER")) {
    e.helper_path = *helper;
    if (e.helper_path.empty() || e.helper_path[0] != '/')
      return "SKILL_MCP_EGRESS_HELPER=\"" + e.helper_path + "\" is not an absolute path";
  } else {
    const std::string built = self_dir + "/../egress/skill-mcp-egress";
    e.helper_path = !self_dir.empty() && IsExecutableFile(built)
                        ? RealPath(built)
                        : std::string(SKILL_MCP_LIBEXECDIR) + "/skill-mcp-egress";
  }
  SettleNetwork(c);
  return "";
}

void SettleNetwork(LaunchConfig& c) {
  c.egress_declared = false;
  c.network_off = c.network_mode == NetworkMode::kOff;
  c.network_fallback.clear();
  if (c.network_mode != NetworkMode::kDeclared) return;
  if ((c.namespaces || c.namespaces_pending) && c.network_problem.empty()) {
    c.egress_declared = true;
    return;
  }
  if (!c.network_problem.empty()) {
    // why off, never on, as below.
    c.network_off = true;
    c.network_fallback = c.network_problem;
    return;
  }
  // why off, never on: the operator asked that runs reach only what their skills
  // declare; a host that cannot give a run its own network gives it none.
  c.network_off = true;
  c.network_fallback =
      "runs get no namespaces here (" +
      (!c.namespaces_problem.empty()      ? c.namespaces_problem
       : !c.namespaces_off_reason.empty() ? c.namespaces_off_reason
                                          : std::string("SKILL_MCP_NAMESPACES=off")) +
      "), so none can have a network of its own";
}

std::string NetworkRefusal(const LaunchConfig& c) {
  // why: with neither the seccomp fence nor Landlock's TCP rules, off would not hold;
  // fail closed rather than let runs reach the network.
  if (c.network_off && !c.seccomp && c.landlock_abi < 4)
    return std::string("SKILL_MCP_NETWORK=") + NetworkModeName(c.network_mode) +
           (c.network_fallback.empty() ? "" : " (falling back to off)") +
           " needs the seccomp filter (SKILL_MCP_SECCOMP=on) or Landlock ABI 4 to refuse the "
           "network, and this broker has neither; set SKILL_MCP_NETWORK=on to let runs use the "
           "host's network";
  return "";
}

EgressPolicy EgressPolicyOf(const LaunchConfig& c) {
  return EgressPolicy{c.egress_declared, c.egress.patterns};
}

namespace {

// Whether the operator's SKILL_MCP_EGRESS_ALLOW names `wildcard` itself.
bool OperatorNames(const std::optional<std::vector<EgressPattern>>& patterns,
                   std::string_view wildcard) {
  return patterns && std::any_of(patterns->begin(), patterns->end(),
                                 [wildcard](const EgressPattern& p) { return p.host == wildcard; });
}

}  // namespace

std::optional<std::vector<EgressRule>> RunEgressRules(const EgressPolicy& policy,
                                                      const std::vector<std::string>& declared) {
  if (!policy.declared) return std::nullopt;
  std::vector<EgressRule> rules = EffectiveEgress(declared, policy.patterns);
  // why no address: a run reaches hosts by name (its resolver allots the addresses it
  // can connect to); a literal it cannot reach must not be shown as allowed.
  std::erase_if(rules, [](const EgressRule& r) { return IsAddressLiteral(r.host); });
  // why: "*.com" or "*.github.io" would let a run reach hosts anyone can register or
  // publish; such a wildcard holds only where the operator's own pattern names it.
  std::erase_if(rules, [&policy](const EgressRule& r) {
    return r.host.starts_with("*.") && IsPublicSuffix(std::string_view(r.host).substr(2)) &&
           !OperatorNames(policy.patterns, r.host);
  });
  return rules;
}

std::string RunConnectRefusal(const std::vector<EgressRule>& rules,
                              const std::optional<std::vector<EgressPattern>>& patterns,
                              std::string_view name, uint16_t port) {
  std::string_view crossed;
  for (const EgressRule& rule : rules) {
    if (!EgressHostMatches(rule.host, name) ||
        !std::binary_search(rule.ports.begin(), rule.ports.end(), port))
      continue;
    if (!rule.host.starts_with("*.") || OperatorNames(patterns, rule.host)) return "";
    // why: names under a public suffix are registered by others; "*.amazonaws.com" would
    // otherwise reach anyone's bucket under s3.amazonaws.com.
    std::string_view under = PublicSuffixUnder(name, std::string_view(rule.host).substr(2));
    if (under.empty()) return "";
    crossed = under;
  }
  if (!crossed.empty())
    return "under " + std::string(crossed) +
           ", a public suffix its wildcard does not reach unless SKILL_MCP_EGRESS_ALLOW names it";
  return "not among the hosts the run may reach";
}

std::string EgressRulesRefusal(const std::vector<EgressRule>& rules) {
  // why before any prompt: a run description cannot carry more, so such a run could only
  // fail after the user approved it; asking would promise what cannot start.
  const std::string fix =
      "; narrow them with SKILL_MCP_EGRESS_ALLOW, or set SKILL_MCP_NETWORK=on to let runs "
      "use the host's network";
  if (rules.size() > kRunSpecMaxEgressRules)
    return "the run would be allowed " + std::to_string(rules.size()) +
           " hosts (those its skill declares, narrowed by SKILL_MCP_EGRESS_ALLOW), more than "
           "the " +
           std::to_string(kRunSpecMaxEgressRules) + " a run can be held to" + fix;
  for (const EgressRule& rule : rules)
    if (rule.ports.size() > kRunSpecMaxEgressPorts)
      return "SKILL_MCP_EGRESS_ALLOW gives the run " + std::to_string(rule.ports.size()) +
             " ports of \"" + rule.host + "\", more than the " +
             std::to_string(kRunSpecMaxEgressPorts) + " a run can be held to for one host" + fix;
  return "";
}

}  // namespace skillmcp
