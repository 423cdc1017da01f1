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
// - `name`, `description` and `when-to-use`, when present, must be strings under the YAML
//   1.2 core schema (`description: yes` is the string "yes"; `description: true`, a number,
//   a list or an empty value is `malformed-frontmatter`: quote the text).
// - Other top-level keys (license, metadata, ...) belong to other tools and are ignored.
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

struct SkillMdSplit {
  enum class Status { kOk, kNoOpeningFence, kUnterminated, kTooLarge };
  Status status = Status::kNoOpeningFence;
  std::string_view frontmatter;  // between the fence lines
  std::string_view body;         // after the closing `---`, verbatim
  int frontmatter_line = 2;      // 1-based SKILL.md line where `frontmatter` starts
};
SkillMdSplit SplitSkillMd(std::string_view text);

struct FrontmatterIssue {
  const char* reason;  // reason::kMalformedFrontmatter or reason::kDeclaration
  std::string detail;
};

struct ParsedSkillMd {
  bool servable = false;  // false: a malformed-frontmatter issue says why
  std::optional<std::string> name;
  std::optional<std::string> description;
  std::optional<std::string> when_to_use;
  std::string body;
  bool body_truncated = false;
  bool declaration_present = false;
  Declaration declaration;  // .ok false when absent or refused
  std::vector<FrontmatterIssue> issues;
};

// `text` is SKILL.md as read (at most kSkillMdCap bytes); `truncated` says the file was
// longer, in which case the body's cut is moved back to a character boundary.
ParsedSkillMd ParseSkillMd(std::string_view text, bool truncated);

}  // namespace skillmcp
