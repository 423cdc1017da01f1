// Fuzzes the string half of path containment: whatever it accepts must be a plain
// relative path (no leading '/', no '.' or '..' segment, no backslash, no NUL).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "shared/relpath.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view path(reinterpret_cast<const char*>(data), size);
  if (skillmcp::CheckRelativePath(path) != skillmcp::PathRefusal::kNone) return 0;
  bool bad = path.empty() || path.front() == '/' || path.back() == '/' ||
             path.find('\\') != std::string_view::npos ||
             path.find('\0') != std::string_view::npos ||
             path.find("//") != std::string_view::npos || path == "." || path == ".." ||
             path.substr(0, 2) == "./" || path.substr(0, 3) == "../" ||
             path.find("/../") != std::string_view::npos ||
             path.find("/./") != std::string_view::npos ||
             (path.size() >= 3 && path.substr(path.size() - 3) == "/..") ||
             (path.size() >= 2 && path.substr(path.size() - 2) == "/.");
  if (bad) abort();  // the checker accepted a path it must refuse
  (void)skillmcp::IsUsableSkillName(path);
  return 0;
}
