// JSON string escaping at memory speed, byte for byte what nlohmann::json's dump() writes
// with ensure_ascii false (docs/performance.md): \" \\ \b \f \n \r \t, other control
// bytes as \u00xx (lower-case hex), everything else verbatim.
#pragma once

#include <string>
#include <string_view>

namespace skillmcp {

// Appends the inside of a JSON string holding `s` (no quotes). `levels` 2 escapes that
// once more: the form the bytes take when JSON text carrying them is itself a JSON string
// (a tool's payload inside the JSON-RPC line). `s` must be valid UTF-8; the caller decides
// what invalid bytes become.
void AppendJsonEscaped(std::string* out, std::string_view s, int levels);

}  // namespace skillmcp
