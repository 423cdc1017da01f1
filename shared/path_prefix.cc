#include "shared/path_prefix.h"

namespace skillmcp {

bool IsSameOrBeneath(std::string_view path, std::string_view dir) {
  if (dir.empty() || path.empty()) return false;
  if (dir == "/") return path[0] == '/';
  // why the '/' after the prefix: "/srv/skills2" is not inside "/srv/skills".
  return path.substr(0, dir.size()) == dir &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

}  // namespace skillmcp
