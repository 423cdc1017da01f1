#include "broker/catalogue/load.h"

#include <cerrno>
#include <cstring>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/fsutil.h"
#include "broker/catalogue/manifest.h"
#include "broker/catalogue/reasons.h"
#include "broker/catalogue/skill.h"
#include "broker/catalogue/skills_ext_check.h"
#include "broker/catalogue/yaml_json.h"
#include "shared/open_beneath.h"

namespace skillmcp {
namespace {

std::optional<std::string> ReadSkillMd(const Candidate& c, bool* truncated,
                                       std::vector<Problem>* problems) {
  const std::string at = DisplaySafe(c.path);
  // Why: opened beneath the skill's own descriptor and checked as a regular file on the
  // open descriptor (O_NONBLOCK), so a FIFO cannot hang discovery and a link cannot leave.
  UniqueFd fd = OpenRegularBeneath(c.dir.get(), kSkillMd);
  if (!fd) {
    if (errno == EXDEV) {
      problems->push_back({at, reason::kSymlinkEscape,
                           "SKILL.md is a symlink leading out of the skill's directory; the "
                           "skill is not served. Put the real file in the skill"});
    } else {
      problems->push_back({at, reason::kUnreadableSkillMd,
                           errno == EINVAL
                               ? std::string("SKILL.md is not a regular file; the skill is not "
                                             "served until it is one")
                               : std::string("SKILL.md cannot be opened (") + std::strerror(errno) +
                                     "); the skill is not served"});
    }
    return std::nullopt;
  }
  std::string text;
  if (!ReadCapped(fd.get(), kSkillMdCap, &text, truncated)) {
    problems->push_back({at, reason::kUnreadableSkillMd,
                         std::string("SKILL.md cannot be read (") + std::strerror(errno) +
                             "); the skill is not served"});
    return std::nullopt;
  }
  return text;
}

// Reports each declared script that is not a regular file inside the skill. The entry
// stays declared (the reference keeps it): skill_run refuses it at its path check.
void ReportMissingScripts(const Candidate& c, const std::vector<DeclaredRun>& runs,
                          std::vector<Problem>* problems) {
  for (const auto& run : runs) {
    if (OpenRegularBeneath(c.dir.get(), run.script)) continue;
    problems->push_back({DisplaySafe(c.source), reason::kDeclaredScriptMissing,
                         "the mcp-host block declares the script '" + DisplaySafe(run.script) +
                             "', but it is not a regular file inside the skill (" +
                             std::strerror(errno) +
                             "); it cannot run. Add the file or remove the entry"});
  }
}

// The frontmatter name, shown for a problem: quoted text, or what it is instead.
std::string ShownName(const ParsedSkillMd& parsed) {
  if (parsed.name) return "'" + DisplaySafe(*parsed.name) + "'";
  return "a value that is not a string";
}

}  // namespace

std::optional<Skill> LoadSkill(Candidate candidate, std::vector<Problem>* problems) {
  const Candidate& c = candidate;
  // Every problem of the skill names its real directory, never a file inside it: that is
  // the path the TypeScript server reports.
  const std::string at = DisplaySafe(c.source);
  bool truncated = false;
  std::optional<std::string> text = ReadSkillMd(c, &truncated, problems);
  if (!text) return std::nullopt;
  ParsedSkillMd parsed = ParseSkillMd(*text, truncated);
  for (auto& issue : parsed.issues) problems->push_back({at, issue.reason, issue.detail});
  if (!parsed.servable) return std::nullopt;
  if (parsed.name_present && parsed.name != c.name) {
    // Why: grants name skills; a bundle must not choose the name it is served under, so
    // a differing frontmatter name never renames or stops the skill. `name: ~` is no name.
    problems->push_back({at, reason::kNameMismatch,
                         "the frontmatter says name " + ShownName(parsed) +
                             ", but the skill is served under its directory name '" + c.name +
                             "'; make them agree"});
  }
  Skill skill;
  skill.name = c.name;
  skill.description = std::move(parsed.description);
  skill.when_to_use = std::move(parsed.when_to_use);
  skill.source = c.source;
  skill.root = c.root;
  skill.body = std::move(parsed.body);
  skill.body_truncated = parsed.body_truncated;
  skill.declaration_present = parsed.declaration_present;
  skill.declaration_ok = parsed.declaration.ok;
  skill.frontmatter_json = std::move(parsed.frontmatter_json);
  if (parsed.declaration.ok) {
    ReportMissingScripts(c, parsed.declaration.runs, problems);
    skill.runs = std::move(parsed.declaration.runs);
    skill.declared_egress = std::move(parsed.declaration.egress);
  }
  ManifestResult manifest = WalkManifest(c.dir.get(), c.source);
  skill.files = std::move(manifest.files);
  skill.bytes = manifest.bytes;
  skill.files_complete = !manifest.stopped;
  for (auto& p : manifest.problems) problems->push_back(std::move(p));
  skill.dir = std::move(candidate.dir);
  // Checked here, once the skill is certain to be served (duplicates and the skill limit
  // were settled before loading). Kept on the skill, out of `problems`: the reference's
  // problems never carry this server's extensions (docs/wire.md §9).
  skill.skills_ext_omission = SkillsExtExclusion(skill, at);
  return skill;
}

}  // namespace skillmcp
