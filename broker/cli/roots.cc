#include "broker/cli/roots.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

bool IsDir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> SplitRootList(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t colon = value.find(':', start);
    if (colon == std::string::npos) colon = value.size();
    if (colon > start) out.push_back(value.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

std::string DefaultRoot() {
  std::string exe = RealPath("/proc/self/exe");
  std::string build_broker = RealPath(std::string(SKILL_MCP_BUILD_ROOT) + "/broker");
  std::string source_skills = std::string(SKILL_MCP_SOURCE_ROOT) + "/skills";
  if (!exe.empty() && !build_broker.empty() && exe.rfind(build_broker + "/", 0) == 0 &&
      IsDir(source_skills)) {
    return source_skills;
  }
  return std::string(SKILL_MCP_DATADIR) + "/skills";
}

Roots ResolveRoots(const EnvStore& env) {
  for (const char* var : {"MCP_SKILLS_PATH", "SKILLS_DIR"}) {
    if (auto value = env.GetConfig(var)) {
      Roots r{SplitRootList(*value), var};
      if (!r.paths.empty()) return r;
    }
  }
  return Roots{{DefaultRoot()}, "default"};
}

}  // namespace skillmcp
