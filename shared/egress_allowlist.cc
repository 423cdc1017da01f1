#include "shared/egress_allowlist.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace skillmcp {
namespace {

constexpr size_t kMaxHostLength = 253;
constexpr size_t kMaxLabelLength = 63;

bool IsLabelChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::optional<std::string> CanonicalAddress(std::string_view host) {
  std::string text(host);
  unsigned char bytes[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1)
    return std::string(inet_ntop(AF_INET, bytes, out, sizeof out));
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1)
    return std::string(inet_ntop(AF_INET6, bytes, out, sizeof out));
  return std::nullopt;
}

// Labels of letters, digits and inner hyphens; the last one not all digits, so that
// "127.1" or "10.0.0.300" is never read as a name some resolver takes for an address.
bool IsDnsName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostLength) return false;
  size_t start = 0;
  bool last_all_digits = false;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    std::string_view label = name.substr(start, dot - start);
    if (label.empty() || label.size() > kMaxLabelLength) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    if (!std::all_of(label.begin(), label.end(), IsLabelChar)) return false;
    last_all_digits =
        std::all_of(label.begin(), label.end(), [](char c) { return c >= '0' && c <= '9'; });
    start = dot + 1;
  }
  return !last_all_digits;
}

bool IsWildcard(std::string_view host) { return host.starts_with("*."); }

// "*.s1" covers "*.s2" when s2 is s1 or a name under it.
bool WildcardCovers(std::string_view outer, std::string_view inner) {
  std::string_view outer_suffix = outer.substr(2);
  std::string_view inner_suffix = inner.substr(2);
  return inner_suffix == outer_suffix || EgressHostMatches(outer, inner_suffix);
}

// Whether `a` allows everything `b` allows.
bool Covers(std::string_view a, std::string_view b) {
  if (IsWildcard(a) && IsWildcard(b)) return WildcardCovers(a, b);
  if (IsWildcard(b)) return false;
  return EgressHostMatches(a, b);
}

void AddPorts(const std::optional<uint16_t>& port, std::vector<uint16_t>* ports) {
  if (port) {
    ports->push_back(*port);
  } else {
    ports->insert(ports->end(), std::begin(kDefaultEgressPorts), std::end(kDefaultEgressPorts));
  }
}

void SortUnique(std::vector<uint16_t>* ports) {
  std::sort(ports->begin(), ports->end());
  ports->erase(std::unique(ports->begin(), ports->end()), ports->end());
}

// Adds `rule` to `rules`, or its ports to the rule for the same host.
void Merge(EgressRule rule, std::vector<EgressRule>* rules) {
  for (EgressRule& have : *rules) {
    if (have.host == rule.host) {
      have.ports.insert(have.ports.end(), rule.ports.begin(), rule.ports.end());
      SortUnique(&have.ports);
      return;
    }
  }
  SortUnique(&rule.ports);
  rules->push_back(std::move(rule));
}

std::optional<uint16_t> ParsePort(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
    return std::nullopt;
  return static_cast<uint16_t>(value);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> NormaliseEgressHost(std::string_view host, bool wildcard) {
  if (std::optional<std::string> address = CanonicalAddress(host)) return address;
  std::string name;
  name.reserve(host.size());
  for (char c : host) name.push_back(Lower(c));
  if (name.ends_with('.')) name.pop_back();
  if (IsWildcard(name)) {
    // why: "*" alone or over a bare top-level name would declare most of the internet.
    if (!wildcard || name.find('.', 2) == std::string::npos) return std::nullopt;
    if (!IsDnsName(std::string_view(name).substr(2))) return std::nullopt;
    return name;
  }
  if (!IsDnsName(name)) return std::nullopt;
  return name;
}

bool IsAddressLiteral(std::string_view host) { return CanonicalAddress(host).has_value(); }

bool EgressHostMatches(std::string_view pattern_host, std::string_view name) {
  if (!IsWildcard(pattern_host)) return pattern_host == name;
  if (IsAddressLiteral(name)) return false;
  std::string_view suffix = pattern_host.substr(1);  // ".example.com"
  return name.size() > suffix.size() && name.ends_with(suffix);
}

std::vector<std::string_view> EgressListEntries(std::string_view text) {
  std::vector<std::string_view> entries;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (!entry.empty()) entries.push_back(entry);
  }
  return entries;
}

std::optional<std::vector<EgressPattern>> ParseEgressPatterns(std::string_view text,
                                                              std::string* error) {
  std::vector<EgressPattern> patterns;
  for (std::string_view entry : EgressListEntries(text)) {
    std::string_view host = entry;
    std::optional<uint16_t> port;
    if (entry.front() == '[') {
      size_t close = entry.find(']');
      if (close == std::string_view::npos) {
        *error = "\"" + std::string(entry) + "\" opens a bracket it does not close";
        return std::nullopt;
      }
      host = entry.substr(1, close - 1);
      std::string_view rest = entry.substr(close + 1);
      if (!rest.empty()) {
        if (rest.front() != ':' || !(port = ParsePort(rest.substr(1)))) {
          *error = "\"" + std::string(entry) + "\" has no port 1 to 65535 after its ':'";
          return std::nullopt;
        }
      }
    } else if (size_t colon = entry.find(':');
               colon != std::string_view::npos &&
               entry.find(':', colon + 1) == std::string_view::npos) {
      host = entry.substr(0, colon);
      if (!(port = ParsePort(entry.substr(colon + 1)))) {
        *error = "\"" + std::string(entry) + "\" has no port 1 to 65535 after its ':'";
        return std::nullopt;
      }
    }
    std::optional<std::string> normal = NormaliseEgressHost(host, /*wildcard=*/true);
    if (!normal) {
      *error = "\"" + std::string(entry) +
               "\" is neither a host name, \"*.\" and a name, nor an IP address";
      return std::nullopt;
    }
    patterns.push_back({*normal, port});
  }
  return patterns;
}

std::vector<EgressRule> EffectiveEgress(const std::vector<std::string>& declared,
                                        const std::optional<std::vector<EgressPattern>>& patterns) {
  std::vector<EgressRule> rules;
  for (const std::string& entry : declared) {
    std::optional<std::string> host = NormaliseEgressHost(entry, /*wildcard=*/true);
    if (!host) continue;
    if (!patterns) {
      EgressRule rule{*host, {}};
      AddPorts(std::nullopt, &rule.ports);
      Merge(std::move(rule), &rules);
      continue;
    }
    for (const EgressPattern& pattern : *patterns) {
      // The narrower of the two, when one allows all the other does.
      std::string narrower;
      if (Covers(pattern.host, *host)) {
        narrower = *host;
      } else if (Covers(*host, pattern.host)) {
        narrower = pattern.host;
      } else {
        continue;
      }
      EgressRule rule{narrower, {}};
      AddPorts(pattern.port, &rule.ports);
      Merge(std::move(rule), &rules);
    }
  }
  return rules;
}

bool EgressAllows(const std::vector<EgressRule>& rules, std::string_view name, uint16_t port) {
  for (const EgressRule& rule : rules) {
    if (!EgressHostMatches(rule.host, name)) continue;
    if (std::binary_search(rule.ports.begin(), rule.ports.end(), port)) return true;
  }
  return false;
}

}  // namespace skillmcp
