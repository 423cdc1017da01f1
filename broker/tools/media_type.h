#pragma once

#include <string_view>

namespace skillmcp {

// Media type by the last extension, lower-cased (docs/wire.md "Names and paths"); else
// application/octet-stream.
const char* MediaTypeForPath(std::string_view path);

}  // namespace skillmcp
