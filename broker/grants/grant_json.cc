#include "broker/grants/grant_json.h"

namespace skillmcp {
namespace {

nlohmann::ordered_json Notes(const std::vector<ScriptNote>& notes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ScriptNote& note : notes) {
    nlohmann::ordered_json item;
    item["script"] = note.script;
    item["reason"] = note.reason;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

void AppendCatalogueGrantFields(nlohmann::ordered_json& list, const GrantDecision& decision) {
  list["grantFrom"] = std::string(GrantSourceName(decision.from));
  if (decision.note) list["grantNote"] = *decision.note;
  if (decision.error) list["grantError"] = *decision.error;
}

void AppendSkillGrantFields(nlohmann::ordered_json& entry, const SkillGrants& grants) {
  entry["executable"] = grants.executable();
  nlohmann::ordered_json scripts = nlohmann::ordered_json::array();
  for (const GrantedScript& script : grants.scripts) {
    nlohmann::ordered_json item;
    item["script"] = script.script;
    item["interpreter"] = script.interpreter;
    item["timeoutMs"] = script.timeout_ms;
    item["env"] = script.env;
    scripts.push_back(std::move(item));
  }
  entry["scripts"] = std::move(scripts);
  entry["unavailableScripts"] = Notes(grants.unavailable);
  if (!grants.ungranted.empty()) entry["ungrantedScripts"] = Notes(grants.ungranted);
}

}  // namespace skillmcp
