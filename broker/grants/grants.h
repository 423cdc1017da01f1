// Who may run what (docs/wire.md §7): the declaration narrowed by the owner's
// MCP_SKILL_RUN, or the hosted default (nothing), or the standalone default (the
// declaration stands). Pure: the environment arrives through callbacks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/catalogue/skill.h"
#include "broker/grants/env_lookup.h"
#include "broker/grants/grant_parse.h"

namespace skillmcp {

// Variables mcp-host's runner injects; any one SET means a host started us.
inline constexpr std::array<std::string_view, 4> kHostedMarkers = {
    "MCP_SKILLS_PATH", "MCP_HOST_METER_FILE", "MCP_DATA_DIR", "MCP_BLOB_BASE_URL"};

// The closed interpreter set of a deployment that does not configure one
// (SKILL_MCP_INTERPRETERS unset, broker/run/interpreters.h).
inline const std::vector<std::string> kDefaultInterpreters = {"node"};

  // A marker counts only when set: blank, "undefined", "null" and an unexpanded "${...}"
  // count as unset, as the reference reads every variable. `get` applies the blank and
  // placeholder rule (EnvStore::GetConfig).
  bool IsHosted(const GetFn& get);
  // Whether `interpreter`, as a declaration names it, is in this deployment's `set`.
  bool IsRunnableInterpreter(std::string_view interpreter,
                             const std::vector<std::string>& set = kDefaultInterpreters);

// The one sentence used by skill_list's unavailableScripts and by skill_run's refusal.
std::string InterpreterUnavailableReason(
    std::string_view interpreter, const std::vector<std::string>& set = kDefaultInterpreters);

enum class GrantSource { kSkillRun, kHostedDefault, kDeclaration };

// "MCP_SKILL_RUN" | "hosted-default" | "declaration"
std::string_view GrantSourceName(GrantSource source);

struct GrantedScript {  // skill_list `scripts[]`: granted and runnable
  std::string script;
  std::string interpreter;
  int64_t timeout_ms = kDefaultTimeoutMs;
  std::vector<std::string> env;  // declared and granted names, declaration order, no repeats
};

struct ScriptNote {  // unavailableScripts[] / ungrantedScripts[]
  std::string script;
  std::string reason;
};

struct SkillGrants {
  std::string skill;
  std::vector<GrantedScript> scripts;
  std::vector<ScriptNote> unavailable;  // always emitted, possibly empty
  std::vector<ScriptNote> ungranted;    // emitted only when non-empty
  bool executable() const { return !scripts.empty(); }

  // Every declared script with its grant state (the lookup's, and skill_load's effective
  // list: the granted ones).
  struct Declared {
    DeclaredRun run;
    bool granted = false;
    std::vector<std::string> granted_env;
  };
  std::vector<Declared> declared;
};

enum class ScriptRefusal { kNone, kUnknownSkill, kUndeclared, kUngranted, kInterpreterUnavailable };

struct ScriptLookup {
  ScriptRefusal refusal = ScriptRefusal::kNone;
  std::optional<GrantedScript> script;  // set when refusal == kNone
  std::string message;                  // prose when refused
};

struct GrantDecision {
  GrantSource from = GrantSource::kDeclaration;
  std::vector<std::string> interpreters = kDefaultInterpreters;  // this deployment's set
  std::optional<std::string> note;                               // grantNote (hosted default)
  std::optional<std::string> error;  // grantError (MCP_SKILL_RUN did not parse)
  std::vector<SkillGrants> skills;   // one per catalogue skill, same order
  std::vector<Problem> problems;     // reason "grant"

  const SkillGrants* Find(std::string_view skill) const;

  // skill_run's question, in docs/wire.md order: unknown skill, then undeclared or ungranted,
  // then interpreter not runnable.
  ScriptLookup Lookup(std::string_view skill, std::string_view script) const;
};

// `skill_run_value` is MCP_SKILL_RUN when set (nullopt otherwise); `hosted` from IsHosted;
// `interpreters` the deployment's set (LaunchConfig::interpreters, by name).
GrantDecision DecideGrants(const Catalogue& catalogue,
                           const std::optional<std::string>& skill_run_value, bool hosted,
                           const std::vector<std::string>& interpreters = kDefaultInterpreters);

// The same, reading the variables through `get`.
GrantDecision DecideGrants(const Catalogue& catalogue, const GetFn& get);

}  // namespace skillmcp
