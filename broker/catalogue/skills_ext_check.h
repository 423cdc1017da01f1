// Which served skills the Skills over MCP extension lists (docs/wire.md §9).
// The tools serve every skill the catalogue holds; `skills/list` and `skills/get` serve only
// those whose entry can keep the extension's promises:
// - the skill path's final segment (the directory name) equals the frontmatter `name`, and
//   that name follows the Agent Skills rule (IsAgentSkillsName);
// - the frontmatter renders as JSON and has a non-empty string `description`;
// - the manifest walk finished (no `file-limit` stop): an entry lists every file;
// - at most kExtMaxResources files and kExtMaxSkillBytes bytes in all, and no file over
//   kExtMaxFileBytes (resources/read serves the first 1 MiB of a file, so a larger file's
//   digest could never be verified against what it returns).
// Every skill left out says why (reasons.h, skills-ext-*), in skill_list's own
// `skillsExtension.omitted` (never in `problems`, which is the reference's array).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "broker/catalogue/skill.h"

namespace skillmcp {

inline constexpr size_t kExtMaxResources = 512;          // the extension's per-skill limit
inline constexpr uint64_t kExtMaxSkillBytes = 16777216;  // 16 MiB, the extension's limit
inline constexpr uint64_t kExtMaxFileBytes = 1048576;    // resources/read's per-file cap

// The Agent Skills name rule: 1 to 64 of a-z, 0-9 and '-', no '-' at either end, no "--".
bool IsAgentSkillsName(std::string_view name);

// What keeps a loaded skill out of skills/list (from its name,
// frontmatter_json and manifest), or nullopt when it meets the rules above.
// `at` is the skill directory as reached from its root, the path every problem names.
std::optional<Problem> SkillsExtExclusion(const Skill& skill, const std::string& at);

}  // namespace skillmcp
