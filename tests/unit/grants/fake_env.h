// A plain map standing in for the server's EnvStore in grant and confirm tests. Set means
// in the map with a value that is not blank and not a "${...}" placeholder (the rule
// EnvStore applies).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "broker/grants/env_lookup.h"

namespace skillmcp::testing {

struct FakeEnv {
  std::map<std::string, std::string, std::less<>> vars;

  bool Set(std::string_view name) const {
    auto it = vars.find(name);
    if (it == vars.end()) return false;
    const std::string& value = it->second;
    if (value.find_first_not_of(" \t\r\n") == std::string::npos) return false;
    if (value.size() >= 3 && value.rfind("${", 0) == 0 && value.back() == '}') return false;
    return true;
  }
  IsSetFn is_set() const {
    return [this](std::string_view name) { return Set(name); };
  }
  GetFn get() const {
    return [this](std::string_view name) -> std::optional<std::string> {
      if (!Set(name)) return std::nullopt;
      return vars.find(name)->second;
    };
  }
};

}  // namespace skillmcp::testing
