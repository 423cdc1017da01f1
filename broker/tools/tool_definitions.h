// tools/list: names, input schemas and annotations as the TypeScript skill-mcp sends them
// (docs/wire.md §2 and §10).
#pragma once

#include <nlohmann/json.hpp>

namespace skillmcp {

// `with_run` adds skill_run (registered only when the run side is built in).
nlohmann::ordered_json ToolDefinitions(bool with_run);

}  // namespace skillmcp
