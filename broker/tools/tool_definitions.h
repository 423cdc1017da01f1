// tools/list: names, input schemas and annotations exactly as docs/wire.md gives them.
#pragma once

#include <nlohmann/json.hpp>

namespace skillmcp {

// `with_run` adds skill_run (registered only when the run side is built in).
nlohmann::ordered_json ToolDefinitions(bool with_run);

}  // namespace skillmcp
