// Argument checks shared by the tools: each failure is an isError result naming the
// argument, never a JSON-RPC error and never a crash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/tools/tool.h"

namespace skillmcp {

// A required non-empty string.
std::optional<ToolResult> RequireString(const Json& args, const char* key, std::string* out);
// An optional string (absent or null leaves `out` unset).
std::optional<ToolResult> OptionalString(const Json& args, const char* key,
                                         std::optional<std::string>* out);
// An array of strings with min/max item counts; `required` false lets it be absent.
std::optional<ToolResult> StringArray(const Json& args, const char* key, bool required,
                                      size_t min_items, size_t max_items,
                                      std::vector<std::string>* out);
}  // namespace skillmcp
