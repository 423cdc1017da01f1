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

// True when this executable runs from its build tree (/proc/self/exe beneath the build's
// broker/ directory): the bundled skills then come from the source tree, and a root broker
// leaves the host's state directory alone (broker/cli/boot.cc).
bool RunsFromBuildTree();

// Pure: splits a ':'-separated list; each entry is trimmed of surrounding whitespace, empty
// entries are dropped, and each is made absolute against `cwd` and normalised lexically
// (`.`, `..`, doubled and trailing '/'), as the TypeScript server's path.resolve does:
// "  solo-kit/ :: grove  " in /srv gives /srv/solo-kit and /srv/grove.
std::vector<std::string> SplitRootList(const std::string& value, const std::string& cwd);

// Pure: `path` (absolute, or relative to the absolute `cwd`) with `.`, `..`, doubled and
// trailing '/' resolved lexically ("/" stays "/").
std::string ResolveLexically(const std::string& path, const std::string& cwd);

}  // namespace skillmcp
