#include "shared/relpath.h"

namespace skillmcp {
namespace {

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

PathRefusal CheckSegment(std::string_view seg) {
  if (seg.empty()) return PathRefusal::kEmptySegment;
  if (seg == "." || seg == "..") return PathRefusal::kDotSegment;
  for (char c : seg) {
    if (!IsAsciiSpace(c)) return PathRefusal::kNone;
  }
  return PathRefusal::kBlankSegment;
}

}  // namespace

PathRefusal CheckRelativePath(std::string_view path) {
  if (path.empty()) return PathRefusal::kEmpty;
  if (path.size() > kMaxRelPathBytes) return PathRefusal::kTooLong;
  if (path.find('\0') != std::string_view::npos) return PathRefusal::kNul;
  if (path.find('\\') != std::string_view::npos) return PathRefusal::kBackslash;
  // Why any '%', not only a valid %XX: a client, proxy or URI layer may decode it (or
  // reject it) before the name reaches us, so such a name has no one reliable spelling;
  // the TypeScript server refuses it too, and skill_file and the manifest must agree.
  if (path.find('%') != std::string_view::npos) return PathRefusal::kPercent;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view seg = path.substr(start, slash == std::string_view::npos
                                                  ? std::string_view::npos
                                                  : slash - start);
    if (PathRefusal r = CheckSegment(seg); r != PathRefusal::kNone) return r;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return PathRefusal::kNone;
}

const char* DescribePathRefusal(PathRefusal refusal) {
  switch (refusal) {
    case PathRefusal::kNone: return "the path is acceptable";
    case PathRefusal::kEmpty: return "the path is empty";
    case PathRefusal::kTooLong: return "the path is longer than 1024 bytes";
    case PathRefusal::kNul: return "the path contains a NUL byte";
    case PathRefusal::kBackslash: return "the path contains a backslash; use '/' between segments";
    case PathRefusal::kPercent:
      return "the path contains '%', which no path served here may contain";
    case PathRefusal::kEmptySegment:
      return "the path has an empty segment (a leading '/', a trailing '/' or '//'); "
             "paths are relative to the skill directory";
    case PathRefusal::kDotSegment:
      return "the path has a '.' or '..' segment; name the file directly";
    case PathRefusal::kBlankSegment: return "the path has a segment made only of whitespace";
  }
  return "the path is refused";
}

bool IsUsableSkillName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  auto alnum = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace skillmcp
