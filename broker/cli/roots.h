// Which directories are served (docs/wire.md §7): MCP_SKILLS_PATH wins, then SKILLS_DIR,
// then the bundled example.
#pragma once

#include <string>
#include <vector>

#include "broker/harden/env_store.h"

namespace skillmcp {

struct Roots {
  std::vector<std::string> paths;
  std::string from;  // "MCP_SKILLS_PATH" | "SKILLS_DIR" | "default"
};

Roots ResolveRoots(const EnvStore& env);

// The bundled example's root: the source tree's skills/ when this executable runs from
// its build tree (found from /proc/self/exe, never from the current directory), else the
// installed datadir copy.
std::string DefaultRoot();

// Pure: splits a ':'-separated list, dropping empty entries.
std::vector<std::string> SplitRootList(const std::string& value);

}  // namespace skillmcp
