#include "broker/grants/grants.h"

#include <algorithm>

#include "shared/small_file.h"

namespace skillmcp {
namespace {

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

bool Contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

void AddUnique(std::vector<std::string>& items, const std::string& item) {
  if (!Contains(items, item)) items.push_back(item);
}

std::string UngrantedReason(const GrantDecision& decision, std::string_view skill,
                            std::string_view script) {
  if (decision.from == GrantSource::kHostedDefault) {
    return "Not granted: this server was started by a host, and there nothing runs until "
           "the owner lists the script in MCP_SKILL_RUN (for example [{\"skill\": " +
           Quoted(skill) + ", \"script\": " + Quoted(script) + "}]).";
  }
  if (decision.error) {
    return "Not granted: MCP_SKILL_RUN is set but could not be read (see grantError), so "
           "nothing runs until it is fixed.";
  }
  return "Not granted: MCP_SKILL_RUN has no row for this skill and script; the owner can "
         "add {\"skill\": " +
         Quoted(skill) + ", \"script\": " + Quoted(script) + "} to allow it.";
}

std::vector<std::string> DeclaredScripts(const SkillGrants& grants) {
  std::vector<std::string> names;
  for (const auto& declared : grants.declared) names.push_back(declared.run.script);
  return names;
}

GrantedScript MakeGranted(const SkillGrants::Declared& declared) {
  return GrantedScript{declared.run.script, declared.run.interpreter, declared.run.timeout_ms,
                       declared.granted_env};
}

const Skill* FindSkill(const Catalogue& catalogue, std::string_view name) {
  for (const Skill& skill : catalogue.skills) {
    if (skill.name == name) return &skill;
  }
  return nullptr;
}

// Checks every MCP_SKILL_RUN row against the catalogue and reports the ones that grant
// nothing (or less than they say).
void ReportRows(const Catalogue& catalogue, const std::vector<GrantRow>& rows,
                std::vector<Problem>& problems) {
  for (size_t index = 0; index < rows.size(); ++index) {
    const GrantRow& row = rows[index];
    const std::string label = "MCP_SKILL_RUN row " + std::to_string(index);
    const Skill* skill = FindSkill(catalogue, row.skill);
    if (skill == nullptr) {
      problems.push_back({"MCP_SKILL_RUN", "grant",
                          label + " names the skill " + Quoted(row.skill) +
                              ", which this server does not serve (check skill_list for the "
                              "directory names and problems); the row grants nothing."});
      continue;
    }
    const DeclaredRun* run = nullptr;
    if (skill->declaration_ok) {
      for (const DeclaredRun& candidate : skill->runs) {
        if (candidate.script == row.script) {
          run = &candidate;
          break;
        }
      }
    }
    if (run == nullptr) {
      std::vector<std::string> declared;
      if (skill->declaration_ok) {
        for (const DeclaredRun& candidate : skill->runs) declared.push_back(candidate.script);
      }
      problems.push_back(
          {skill->source, "grant",
           label + " names the script " + Quoted(row.script) + " of " + Quoted(row.skill) +
               ", which that skill does not declare, so the row grants nothing. Declared: " +
               (declared.empty() ? std::string("none") : Join(declared, ", ")) + "."});
      continue;
    }
    if (!row.env) continue;
    for (const std::string& name : *row.env) {
      if (Contains(run->env, name)) continue;
      problems.push_back({skill->source, "grant",
                          label + " grants " + Quoted(name) + " to " + Quoted(row.skill) + " " +
                              Quoted(row.script) +
                              ", but the script does not ask for that variable in its "
                              "declaration, so it is not passed."});
    }
  }
}

}  // namespace

bool IsHosted(const GetFn& get) {
  for (std::string_view marker : kHostedMarkers) {
    std::optional<std::string> value = get(marker);
    if (!value) continue;
    const size_t b = value->find_first_not_of(" \t\n\r\v\f");
    const size_t e = value->find_last_not_of(" \t\n\r\v\f");
    const std::string_view v = std::string_view(*value).substr(b, e - b + 1);
    if (v != "undefined" && v != "null") return true;
  }
  return false;
}

bool IsRunnableInterpreter(std::string_view interpreter, const std::vector<std::string>& set) {
  // Why a closed set named by the declaration: never inferred from an extension or shebang.
  return std::find(set.begin(), set.end(), interpreter) != set.end();
}

std::string InterpreterUnavailableReason(std::string_view interpreter,
                                         const std::vector<std::string>& names) {
  std::string set;
  for (std::string_view name : names) {
    if (!set.empty()) set += ", ";
    set += name;
  }
  return "The declared interpreter " + Quoted(interpreter) +
         " is not available: this deployment runs scripts only with {" + set +
         "}. The skill's instructions and files still serve.";
}

std::string_view GrantSourceName(GrantSource source) {
  switch (source) {
    case GrantSource::kSkillRun:
      return "MCP_SKILL_RUN";
    case GrantSource::kHostedDefault:
      return "hosted-default";
    case GrantSource::kDeclaration:
      return "declaration";
  }
  return "hosted-default";
}

const SkillGrants* GrantDecision::Find(std::string_view skill) const {
  for (const SkillGrants& grants : skills) {
    if (grants.skill == skill) return &grants;
  }
  return nullptr;
}

ScriptLookup GrantDecision::Lookup(std::string_view skill, std::string_view script) const {
  ScriptLookup lookup;
  const SkillGrants* grants = Find(skill);
  if (grants == nullptr) {
    lookup.refusal = ScriptRefusal::kUnknownSkill;
    lookup.message = "There is no skill named " + Quoted(skill) +
                     "; skill_list names the skills this server serves.";
    return lookup;
  }
  const SkillGrants::Declared* found = nullptr;
  for (const auto& declared : grants->declared) {
    if (declared.run.script == script) {
      found = &declared;
      break;
    }
  }
  // Why: only a declared entry point runs, never "any file in the bundle".
  if (found == nullptr) {
    std::vector<std::string> declared = DeclaredScripts(*grants);
    lookup.refusal = ScriptRefusal::kUndeclared;
    lookup.message = "The skill " + Quoted(skill) + " does not declare the script " +
                     Quoted(script) +
                     ". A script must be declared in the mcp-host: run: list of the skill's "
                     "SKILL.md before it can run. Declared scripts: " +
                     (declared.empty() ? std::string("none") : Join(declared, ", ")) + ".";
    return lookup;
  }
  if (!found->granted) {
    lookup.refusal = ScriptRefusal::kUngranted;
    lookup.message = UngrantedReason(*this, skill, script);
    return lookup;
  }
  if (!IsRunnableInterpreter(found->run.interpreter, interpreters)) {
    lookup.refusal = ScriptRefusal::kInterpreterUnavailable;
    lookup.message = InterpreterUnavailableReason(found->run.interpreter, interpreters);
    return lookup;
  }
  lookup.script = MakeGranted(*found);
  return lookup;
}

GrantDecision DecideGrants(const Catalogue& catalogue,
                           const std::optional<std::string>& skill_run_value, bool hosted,
                           const std::vector<std::string>& interpreters) {
  GrantDecision decision;
  decision.interpreters = interpreters;
  std::vector<GrantRow> rows;
  if (skill_run_value) {
    decision.from = GrantSource::kSkillRun;
    GrantParseResult parsed = ParseSkillRunGrant(*skill_run_value);
    if (parsed.ok) {
      rows = std::move(parsed.rows);
      ReportRows(catalogue, rows, decision.problems);
    } else {
      // Why: a grant that does not parse grants nothing; it never falls back to a default.
      decision.error = parsed.error;
    }
  } else if (hosted) {
    decision.from = GrantSource::kHostedDefault;
    decision.note =
        "A host started this server (one of MCP_SKILLS_PATH, MCP_HOST_METER_FILE, "
        "MCP_DATA_DIR, MCP_BLOB_BASE_URL is present), so no script runs until the owner "
        "grants it in MCP_SKILL_RUN. Instructions and files are served as usual.";
  } else {
    decision.from = GrantSource::kDeclaration;
  }

  for (const Skill& skill : catalogue.skills) {
    SkillGrants grants;
    grants.skill = skill.name;
    // Why: a refused declaration costs the skill its scripts, never its instructions.
    if (skill.declaration_ok) {
      for (const DeclaredRun& run : skill.runs) {
        SkillGrants::Declared declared;
        declared.run = run;
        if (decision.from == GrantSource::kDeclaration) {
          // Standalone: the declaration stands, variables included (previewed by name).
          declared.granted = true;
          for (const std::string& name : run.env) AddUnique(declared.granted_env, name);
        } else if (decision.from == GrantSource::kSkillRun) {
          // Why intersect: a grant can only narrow what the skill itself declared.
          for (const GrantRow& row : rows) {
            if (row.skill != skill.name || row.script != run.script) continue;
            declared.granted = true;
            if (!row.env) continue;
            for (const std::string& name : *row.env) {
              if (Contains(run.env, name)) AddUnique(declared.granted_env, name);
            }
          }
          // Keep the declaration's order, whatever order the rows listed them in.
          std::vector<std::string> ordered;
          for (const std::string& name : run.env) {
            if (Contains(declared.granted_env, name)) AddUnique(ordered, name);
          }
          declared.granted_env = std::move(ordered);
        }
        grants.declared.push_back(std::move(declared));
      }
    }
    for (const auto& declared : grants.declared) {
      if (!IsRunnableInterpreter(declared.run.interpreter, interpreters)) {
        grants.unavailable.push_back(
            {declared.run.script,
             InterpreterUnavailableReason(declared.run.interpreter, interpreters)});
      } else if (declared.granted) {
        grants.scripts.push_back(MakeGranted(declared));
      } else {
        grants.ungranted.push_back(
            {declared.run.script, UngrantedReason(decision, skill.name, declared.run.script)});
      }
    }
    decision.skills.push_back(std::move(grants));
  }
  return decision;
}

GrantDecision DecideGrants(const Catalogue& catalogue, const GetFn& get) {
  return DecideGrants(catalogue, get("MCP_SKILL_RUN"), IsHosted(get));
}

}  // namespace skillmcp
