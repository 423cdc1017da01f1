// Which hosts a run in the declared network mode may reach: the skill's `egress:` entries
// narrowed by the operator's patterns, fixed when the run is confirmed. The broker checks
// every connection a run asks for against this list; the run's resolver answers only the
// names it allows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// A declared name allows these ports when neither it nor the operator names one: the
// reference's `egress:` entries carry no port, and a skill that calls an API speaks
// HTTPS (or HTTP, to be redirected).
inline constexpr uint16_t kDefaultEgressPorts[] = {443, 80};

// One allowed host: an exact lower-case DNS name or IPv4/IPv6 literal, or "*.suffix" (any
// name with at least one more label), and the ports it may be reached on (sorted, unique).
struct EgressRule {
  std::string host;
  std::vector<uint16_t> ports;
  bool operator==(const EgressRule&) const = default;
};

// An operator's pattern (SKILL_MCP_EGRESS_ALLOW): a host as above, optionally ":port".
struct EgressPattern {
  std::string host;
  std::optional<uint16_t> port;
  bool operator==(const EgressPattern&) const = default;
};

// The name lower-cased without its trailing dot when it is a usable host name: labels of
// 1 to 63 letters, digits and inner hyphens, at most 253 characters in all, or an IPv4 or
// IPv6 literal (IPv6 in its canonical text form); a leading "*." only with `wildcard`.
// Nothing for anything else ("*" alone, "a..b", "-a", "*.com.*", an empty string).
std::optional<std::string> NormaliseEgressHost(std::string_view host, bool wildcard);

// True when `host` is an IPv4 or IPv6 literal (after NormaliseEgressHost).
bool IsAddressLiteral(std::string_view host);

// The entries of a comma-separated egress setting (SKILL_MCP_EGRESS_ALLOW,
// SKILL_MCP_EGRESS_RESOLVE) in their order, each without the blanks (spaces, tabs) around
// it; blank entries are left out. Views into `text`.
std::vector<std::string_view> EgressListEntries(std::string_view text);

// Parses SKILL_MCP_EGRESS_ALLOW: comma-separated patterns (EgressListEntries), IPv6
// literals with a port in brackets ("[::1]:8443"). On error, `error` says which entry and
// why, and nothing is returned.
std::optional<std::vector<EgressPattern>> ParseEgressPatterns(std::string_view text,
                                                              std::string* error);

// Whether `pattern_host` (a normalised host or "*.suffix") covers `name` (normalised).
bool EgressHostMatches(std::string_view pattern_host, std::string_view name);

// The run's rules: each declared entry the pattern list allows (all of them when
// `patterns` is nothing, none when it is an empty list), in declaration order, with
// the ports the matching patterns name, or kDefaultEgressPorts when none names one. A
// declared wildcard is kept only as narrow as the operator's: "*.example.com" under the
// pattern "api.example.com" becomes "api.example.com". Entries that do not normalise are
// skipped (the catalogue reports them).
std::vector<EgressRule> EffectiveEgress(const std::vector<std::string>& declared,
                                        const std::optional<std::vector<EgressPattern>>& patterns);

// Whether the rules allow `name` (normalised) on `port`.
bool EgressAllows(const std::vector<EgressRule>& rules, std::string_view name, uint16_t port);

}  // namespace skillmcp
