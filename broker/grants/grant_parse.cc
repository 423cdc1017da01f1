#include "broker/grants/grant_parse.h"

#include <exception>
#include <nlohmann/json.hpp>

namespace skillmcp {
namespace {

using nlohmann::json;

GrantParseResult Fail(std::string message) {
  GrantParseResult result;
  result.error = std::move(message);
  return result;
}

std::string RowLabel(size_t index) { return "MCP_SKILL_RUN row " + std::to_string(index); }

// Reads one row into `row`; returns an error sentence, empty on success.
std::string ReadRow(const json& value, size_t index, GrantRow& row) {
  if (!value.is_object()) {
    return RowLabel(index) +
           " is not an object; each row must look like "
           "{\"skill\": \"<name>\", \"script\": \"<path>\", \"env\": [\"VAR\"]}.";
  }
  for (const auto& [key, member] : value.items()) {
    // Why: an unknown key is most likely a misspelt "env" or "script"; granting what the
    // rest of the row says would silently run something other than what the owner meant.
    if (key != "skill" && key != "script" && key != "env") {
      return RowLabel(index) + " has the key \"" + key +
             "\", which a grant does not use (only skill, script and env are read).";
    }
  }
  auto skill = value.find("skill");
  if (skill == value.end() || !skill->is_string()) {
    return RowLabel(index) + " needs \"skill\" as a string (the skill's directory name).";
  }
  auto script = value.find("script");
  if (script == value.end() || !script->is_string()) {
    return RowLabel(index) + " needs \"script\" as a string (the path its SKILL.md declares).";
  }
  row.skill = skill->get<std::string>();
  row.script = script->get<std::string>();
  auto env = value.find("env");
  if (env != value.end()) {
    if (!env->is_array()) {
      return RowLabel(index) + " has \"env\" that is not a list; write it as [\"NAME\", ...].";
    }
    std::vector<std::string> names;
    for (const json& name : *env) {
      if (!name.is_string()) {
        return RowLabel(index) + " lists an \"env\" entry that is not a string.";
      }
      names.push_back(name.get<std::string>());
    }
    row.env = std::move(names);
  }
  return {};
}

}  // namespace

GrantParseResult ParseSkillRunGrant(std::string_view text) {
  if (text.size() > kMaxGrantBytes) {
    return Fail("MCP_SKILL_RUN is larger than " + std::to_string(kMaxGrantBytes) +
                " bytes, so it was not read; nothing is granted.");
  }
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return Fail("MCP_SKILL_RUN is not valid JSON (the parser stopped near byte " +
                std::to_string(e.byte) + "); nothing is granted until it is fixed.");
  } catch (const std::exception&) {
    return Fail("MCP_SKILL_RUN could not be read as JSON; nothing is granted.");
  }
  // Why: a grant that is not exactly the documented shape is refused whole rather than
  // partly honoured; the owner sees grantError instead of a guess.
  if (!doc.is_array()) {
    return Fail(
        "MCP_SKILL_RUN must be a JSON array of {skill, script, env?} rows; "
        "nothing is granted.");
  }
  GrantParseResult result;
  try {
    size_t index = 0;
    for (const json& value : doc) {
      GrantRow row;
      std::string error = ReadRow(value, index, row);
      if (!error.empty()) return Fail(error + " Nothing is granted until it is fixed.");
      result.rows.push_back(std::move(row));
      ++index;
    }
  } catch (const std::exception&) {
    return Fail("MCP_SKILL_RUN could not be read; nothing is granted.");
  }
  result.ok = true;
  return result;
}

}  // namespace skillmcp
