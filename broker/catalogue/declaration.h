// The `mcp-host:` declaration block (docs/wire.md §5): what a skill asks to run. A
// declaration narrows and never grants; this module only reads it, strictly.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "broker/catalogue/skill.h"

namespace skillmcp {

inline constexpr int kDeclarationMajorVersion = 1;
inline constexpr char kDeclarationKey[] = "mcp-host";

struct Declaration {
  bool ok = false;  // accepted; false means refused wholesale (no script may run)
  std::vector<DeclaredRun> runs;
  std::vector<DeclaredEnvField> env;
  std::vector<std::string> egress;  // host patterns (^[A-Za-z0-9.*-]+$), first of each kept
  std::vector<std::string> issues;  // each becomes one `declaration` problem's detail
};

// Interprets the value of the frontmatter's `mcp-host` key, already vetted by
// LoadStrictYaml. `line_offset` converts the node marks (0-based lines of the
// frontmatter text) into 1-based lines of SKILL.md. Pure; never throws.
Declaration InterpretDeclaration(const YAML::Node& block, int line_offset);

// Variables no declaration may ask for: they configure this server, or could subvert
// the interpreter it launches.
bool IsReservedVariable(std::string_view name);

// ^[A-Za-z_][A-Za-z0-9_]*$, at most 128 bytes.
bool IsUsableVariableName(std::string_view name);

}  // namespace skillmcp
