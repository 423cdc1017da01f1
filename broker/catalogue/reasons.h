// The stable `reason` values of skill_list's problems (docs/wire.md §3). Clients switch on
// these strings, so they are spelled exactly as the TypeScript server spells them.
#pragma once

namespace skillmcp::reason {

inline constexpr char kRootUnreadable[] = "root-unreadable";
inline constexpr char kNoSkillMd[] = "no-skill-md";
inline constexpr char kUnreadableSkillMd[] = "unreadable-skill-md";
inline constexpr char kMalformedFrontmatter[] = "malformed-frontmatter";
inline constexpr char kDeclaration[] = "declaration";
inline constexpr char kDuplicateName[] = "duplicate-name";
inline constexpr char kNameMismatch[] = "name-mismatch";
inline constexpr char kUnusableName[] = "unusable-name";
inline constexpr char kDeclaredScriptMissing[] = "declared-script-missing";
inline constexpr char kSymlinkEscape[] = "symlink-escape";
inline constexpr char kUnusablePath[] = "unusable-path";
inline constexpr char kFileLimit[] = "file-limit";
inline constexpr char kSkillLimit[] = "skill-limit";
inline constexpr char kGrant[] = "grant";
inline constexpr char kEnvironUnscrubbed[] = "environ-unscrubbed";
// The Skills over MCP extension (docs/wire.md §9): a skill the tools serve but
// skills/list leaves out, and why. These go in skill_list's skillsExtension.omitted,
// never in `problems` (docs/wire.md §3).
inline constexpr char kSkillsExtName[] = "skills-ext-name";
inline constexpr char kSkillsExtFrontmatter[] = "skills-ext-frontmatter";
inline constexpr char kSkillsExtLimit[] = "skills-ext-limit";

}  // namespace skillmcp::reason
