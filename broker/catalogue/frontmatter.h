// SKILL.md = `---` fence, YAML frontmatter, `---` fence, body. Pure (text in, struct out)
// so that it can be fuzzed and tested without a filesystem.
//
// Decisions (each has a test in tests/unit/catalogue):
// - The file must open with a `---` line (after an optional UTF-8 BOM) and the frontmatter
//   must be closed by a later `---` line (trailing blanks or CR allowed on both fences).
//   A file without an opening fence, or whose frontmatter is never closed, is
//   `malformed-frontmatter`: without frontmatter there is no description, and a half-read
//   file would serve text the author did not mean as the body.
// - Frontmatter over kFrontmatterCap bytes is `malformed-frontmatter` (not read at all).
// - `name`, `description` and `when-to-use` (or `when_to_use`) are read when they are
//   strings under the YAML 1.2 core schema (`description: yes` is the string "yes"). A
//   value of another type (`description: 1.10`, `true`, a list, an empty value) counts as
//   absent and the skill is still served, as the TypeScript server does (docs/wire.md
//   §1). `name_present` tells a non-string `name` from a missing or
//   null one (`name: ~`): the former is a `name-mismatch`, the latter nothing.
// - Top-level keys other than kKnownFrontmatterKeys are ignored and reported, one
//   `declaration` issue per key (a `hooks:` key means nothing here; its author should know).
// - Strictness violations (anchors, aliases, merge keys, tags, duplicate keys, deep
//   nesting) and syntax errors inside a top-level `mcp-host:` block cost only the
//   declaration (`declaration` problem, skill served without scripts); anywhere else they
//   are `malformed-frontmatter`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/catalogue/declaration.h"

namespace skillmcp {

// The top-level frontmatter keys this server (or the Agent Skills format) gives a meaning.
inline constexpr std::string_view kKnownFrontmatterKeys[] = {
    "name",    "description",   "when-to-use", "when_to_use", "license",
    "version", "allowed-tools", "metadata",    "mcp-host"};

struct SkillMdSplit {
  enum class Status { kOk, kNoOpeningFence, kUnterminated, kTooLarge };
  Status status = Status::kNoOpeningFence;
  std::string_view frontmatter;  // between the fence lines
  std::string_view body;         // after the closing `---` line and its line break, verbatim
  int frontmatter_line = 2;      // 1-based SKILL.md line where `frontmatter` starts
};
SkillMdSplit SplitSkillMd(std::string_view text);

struct FrontmatterIssue {
  const char* reason;  // reason::kMalformedFrontmatter or reason::kDeclaration
  std::string detail;
};

struct ParsedSkillMd {
  bool servable = false;            // false: a malformed-frontmatter issue says why
  std::optional<std::string> name;  // when `name` is a string
  bool name_present = false;        // the key is there and not null, whatever its value
  std::optional<std::string> description;
  std::optional<std::string> when_to_use;
  std::string body;
  bool body_truncated = false;
  bool declaration_present = false;
  Declaration declaration;  // .ok false when absent or refused
  // FrontmatterJsonText of the frontmatter (yaml_json.h), from this parse: "" when the
  // whole does not parse strictly or is no mapping JSON can carry.
  std::string frontmatter_json;
  std::vector<FrontmatterIssue> issues;
};

// `text` is SKILL.md as read (at most kSkillMdCap bytes); `truncated` says the file was
// longer, in which case the body's cut is moved back to a character boundary.
ParsedSkillMd ParseSkillMd(std::string_view text, bool truncated);

}  // namespace skillmcp
