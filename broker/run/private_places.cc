#include "broker/run/private_places.h"

#include <sys/stat.h>

#include <set>

#include "shared/path_prefix.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

// What a run needs to start and read: never beneath a cover.
constexpr const char* kSystemDirs[] = {"/usr", "/etc", "/bin", "/sbin", "/lib",
                                       "/lib32", "/lib64", "/libx32", "/proc", "/sys", "/dev"};

bool HoldsTheSystem(const std::string& place) {
  for (const char* dir : kSystemDirs)
    if (IsSameOrBeneath(dir, place)) return true;
  return false;
}

}  // namespace

std::vector<std::string> PrivatePlaces(std::string_view home, std::string_view runtime_dir) {
  std::vector<std::string> candidates(std::begin(kPrivatePlaces), std::end(kPrivatePlaces));
  for (std::string_view extra : {home, runtime_dir})
    if (!extra.empty() && extra[0] == '/') candidates.emplace_back(extra);
  std::set<std::string> places;
  for (const std::string& candidate : candidates) {
    const std::string real = RealPath(candidate);
    struct stat st {};
    if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (HoldsTheSystem(real)) continue;
    places.insert(real);
  }
  return {places.begin(), places.end()};
}

}  // namespace skillmcp
