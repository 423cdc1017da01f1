#include "broker/catalogue/skills_ext_check.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "broker/catalogue/manifest.h"
#include "broker/catalogue/reasons.h"

namespace skillmcp {
namespace {

// Why the skill cannot be listed under the naming rule, or nullopt when it can.
std::optional<std::string> NameFault(const Skill& s, const nlohmann::json& fm) {
  auto name = fm.find("name");
  if (name == fm.end() || !name->is_string()) {
    return "the frontmatter has no string `name`, and the extension needs the URI's last "
           "segment '" +
           s.name + "' to equal it";
  }
  const std::string& n = name->get_ref<const std::string&>();
  if (n != s.name) {
    return "the frontmatter name '" + DisplaySafe(n) + "' differs from the directory name '" +
           s.name + "', and the extension needs the URI's last segment to equal it";
  }
  if (!IsAgentSkillsName(n)) {
    return "the name '" + DisplaySafe(n) +
           "' breaks the Agent Skills name rule (1 to 64 of a-z, 0-9 "
           "and '-', no '-' at either end, no '--')";
  }
  return std::nullopt;
}

std::optional<std::string> LimitFault(const Skill& s) {
  // Why: an entry's `resources` must list every file of the bundle; after a stopped walk
  // the manifest holds only what was walked, so the entry would be incomplete.
  if (!s.files_complete) {
    return "the file walk stopped at this server's limit of " + std::to_string(kMaxFilesPerSkill) +
           " files or " + std::to_string(kMaxDirsPerSkill) +
           " directories (file-limit), so its files could not all be listed, and the "
           "extension lists every file of a skill";
  }
  if (s.files.size() > kExtMaxResources) {
    return std::to_string(s.files.size()) + " files, over the extension's " +
           std::to_string(kExtMaxResources) + " per skill";
  }
  if (s.bytes > kExtMaxSkillBytes) {
    return std::to_string(s.bytes) + " bytes in all, over the extension's 16 MiB per skill";
  }
  for (const ManifestFile& f : s.files) {
    if (f.size > kExtMaxFileBytes) {
      return "'" + f.path + "' is " + std::to_string(f.size) +
             " bytes; resources/read serves at most 1 MiB of a file, so its digest could "
             "not be checked against what it returns";
    }
  }
  return std::nullopt;
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

std::optional<Problem> SkillsExtExclusion(const Skill& s, const std::string& at) {
  const std::string tail = "; skills/list leaves it out, the tools still serve it";
  nlohmann::json fm = nlohmann::json::parse(s.frontmatter_json, nullptr, false);
  if (!fm.is_object()) {
    return Problem{at, reason::kSkillsExtFrontmatter,
                   "the frontmatter cannot be rendered as JSON (it must parse strictly as a "
                   "whole and hold no .inf or .nan)" +
                       tail};
  }
  if (auto fault = NameFault(s, fm)) {
    return Problem{at, reason::kSkillsExtName, *fault + tail};
  }
  auto d = fm.find("description");
  if (d == fm.end() || !d->is_string() || d->get_ref<const std::string&>().empty()) {
    return Problem{at, reason::kSkillsExtFrontmatter,
                   "the frontmatter has no non-empty string `description`" + tail};
  }
  if (auto fault = LimitFault(s)) return Problem{at, reason::kSkillsExtLimit, *fault + tail};
  return std::nullopt;
}

bool IsAgentSkillsName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (name.front() == '-' || name.back() == '-') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '-') {
      if (name[i + 1] == '-') return false;  // i + 1 < size: the last char is not '-'
    } else if (!IsLowerAlnum(name[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace skillmcp
