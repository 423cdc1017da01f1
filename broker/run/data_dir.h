// The path the broker sends the worker for the run's MCP_DATA_DIR rule (docs/isolation.md,
// "The filesystem allowlist"); the worker opens it and decides by the directory's identity.
#pragma once

#include <string>
#include <string_view>

namespace skillmcp {

// The data directory path for the worker from the variable's value: its real path; where
// realpath fails, a normalised absolute value as it is, else "" (no rule; a warning names
// the variable and the reason). "" for a relative value.
std::string DataDirRulePath(std::string_view value);

}  // namespace skillmcp
