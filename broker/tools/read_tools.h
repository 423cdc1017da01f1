// The three read tools. Pure over the catalogue view plus bounded file reads.
#pragma once

#include "broker/tools/tool.h"

namespace skillmcp {

ToolResult SkillList(const CatalogueView& view);
ToolResult SkillLoad(const CatalogueView& view, const Json& args);
ToolResult SkillFile(const CatalogueView& view, const Json& args);

}  // namespace skillmcp
