// Variable lookups the grant and confirmation code takes as callbacks, so it never depends
// on where the environment lives (EnvStore in the server, a plain map in tests).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace skillmcp {

// True when the variable has a usable value: not blank and not an unexpanded "${...}"
// placeholder. The caller applies that rule (EnvStore::IsSet).
using IsSetFn = std::function<bool(std::string_view)>;

// The value of a non-secret configuration variable, nullopt when it is not set (same rule
// as IsSetFn).
using GetFn = std::function<std::optional<std::string>(std::string_view)>;

}  // namespace skillmcp
