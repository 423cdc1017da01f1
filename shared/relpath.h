// The string half of path containment (docs/wire.md §4): a relative path of plain
// segments. The resolved half is OpenBeneath(); both always run.
#pragma once

#include <string_view>

namespace skillmcp {

// In the order the checks run (docs/wire.md "Names and paths").
enum class PathRefusal {
  kNone,
  kEmpty,
  kTooLong,  // more than kMaxRelPathBytes
  kNul,
  kBackslash,
  kPercent,       // any '%': a decode anywhere on the way would make it another path
  kEmptySegment,  // leading '/', trailing '/', or '//'
  kDotSegment,    // '.' or '..'
  kBlankSegment,  // whitespace only
};

// Why: longer than any real bundle path; bounds the work each check and open does.
inline constexpr size_t kMaxRelPathBytes = 1024;

PathRefusal CheckRelativePath(std::string_view path);

// A sentence for a person: what is wrong with the path.
const char* DescribePathRefusal(PathRefusal refusal);

// Skill (directory) names: ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
bool IsUsableSkillName(std::string_view name);

}  // namespace skillmcp
