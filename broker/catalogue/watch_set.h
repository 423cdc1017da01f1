// Which directories a live catalogue watches (docs/configuration.md, "SKILL_MCP_WATCH"):
// exactly those whose change can change what the scan finds, at the depth it reads them.
#pragma once

#include <string>
#include <vector>

#include "broker/catalogue/skill.h"

namespace skillmcp {

// The real paths, without repeats, in this order: each root; each directory entry of it
// (a skill, a skill to be, or a link to one) and, when present, `<root>/skills` and its
// entries (roots.h's layouts); then each skill's directory and every directory its
// manifest lists a file in. Reads directories (at most kMaxRootEntries entries each), so it
// runs where the scan runs, off the event loop.
std::vector<std::string> WatchedDirs(const std::vector<std::string>& roots,
                                     const Catalogue& catalogue);

}  // namespace skillmcp
