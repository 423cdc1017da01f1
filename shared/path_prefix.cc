#include "shared/path_prefix.h"

namespace skillmcp {

bool IsSameOrBeneath(std::string_view path, std::string_view dir) {
  if (dir.empty() || path.empty()) return false;
  if (dir == "/") return path[0] == '/';
  // why the '/' after the prefix: "/srv/skills2" is not inside "/srv/skills".
  return path.substr(0, dir.size()) == dir &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

bool IsNormalisedAbsolutePath(std::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != part.npos) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace skillmcp
