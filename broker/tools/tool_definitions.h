// tools/list: names, input schemas and annotations as the TypeScript skill-mcp sends them
// (README.md, "Tools" and "Wire decisions").
#pragma once

#include <nlohmann/json.hpp>

namespace skillmcp {

// `with_run` adds skill_run (registered only when the run side is built in).
nlohmann::ordered_json ToolDefinitions(bool with_run);

}  // namespace skillmcp
