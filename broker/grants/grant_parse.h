// MCP_SKILL_RUN: the owner's grant, a JSON array of {skill, script, env?} rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

struct GrantRow {
  std::string skill;                            // directory name
  std::string script;                           // as declared in the skill's mcp-host: run:
  std::optional<std::vector<std::string>> env;  // variables granted to that script
};

struct GrantParseResult {
  bool ok = false;
  std::vector<GrantRow> rows;  // empty unless ok
  std::string error;           // prose for `grantError`, empty when ok
};

// Strict reading: the value must be a JSON array; every row an object holding a string
// `skill`, a string `script` and optionally `env`, an array of strings. Any other shape,
// including a row key other than those three, fails the whole value: nothing is granted
// then. An empty array parses and grants nothing. Never throws.
GrantParseResult ParseSkillRunGrant(std::string_view json);

// Inputs longer than this are refused before parsing (the variable is hand-written JSON;
// a megabyte of it is a mistake, not a grant).
inline constexpr size_t kMaxGrantBytes = 1 << 20;

}  // namespace skillmcp
