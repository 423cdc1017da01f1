// preview.willRun (docs/wire.md §6): what the user approves and what the confirmToken is
// bound to. Names only, never values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shared/egress_allowlist.h"

namespace skillmcp {

struct WillRun {
  std::string skill;        // directory name
  std::string interpreter;  // the declared interpreter ("node")
  // The binary that runs it, as pinned at boot; shown (and so bound by the token) where
  // the operator configured the interpreter set (SKILL_MCP_INTERPRETERS), omitted
  // otherwise so a deployment that did not keeps the willRun it always had.
  std::optional<std::string> interpreter_path;
  std::vector<std::string> argv;           // script path, then the arguments exactly as passed
  std::string cwd;                         // the skill's own directory
  int64_t timeout_ms = 0;                  // after the 300 s clamp
  std::vector<std::string> env_names;      // ComputeScriptEnv().names
  std::vector<std::string> env_not_set;    // emitted only when non-empty
  std::optional<std::string> env_warning;  // standalone only
  // The declared network mode only: the hosts and ports the run may reach, in the order
  // the skill declares them (broker/run/network_mode.h); [] when none.
  std::optional<std::vector<EgressRule>> egress;
  // Not shown: which file the user approves (device, inode, size, sha256 of its bytes;
  // ScriptIdentity::Binding). The token binds it beside the canonical form, so a script
  // changed after the preview is DRAFT_CHANGED (docs/wire.md).
  std::string script_identity;
};

// {skill, interpreter, interpreterPath?, argv, cwd, timeoutMs, envNames, envNotSet?,
// envWarning?, egress?} (egress: [{host, ports}]) in exactly
// that order; optional keys are omitted, never null.
nlohmann::ordered_json WillRunJson(const WillRun& will_run);

// The bytes a token binds: the same object with its keys SORTED (nlohmann::json keeps
// objects in a std::map, so dump() writes keys in byte order) and compact (no spaces).
// Two willRuns that would show differently always give different bytes. nullopt when a
// field is not valid UTF-8 (such a run cannot be shown faithfully, so it is not confirmable).
std::optional<std::string> CanonicalWillRun(const WillRun& will_run);

}  // namespace skillmcp
