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

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string Trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && IsSpace(s[b])) ++b;
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// The working directory, or "/" when it cannot be read (it was removed): a relative root
// then names a directory under "/", which discovery reports if it does not exist.
std::string WorkingDirectory() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string("/");
}

}  // namespace

std::string ResolveLexically(const std::string& path, const std::string& cwd) {
  std::vector<std::string> parts;
  const std::string joined = path.rfind('/', 0) == 0 ? path : cwd + "/" + path;
  size_t start = 0;
  while (start <= joined.size()) {
    size_t slash = joined.find('/', start);
    if (slash == std::string::npos) slash = joined.size();
    std::string part = joined.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    start = slash + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

std::vector<std::string> SplitRootList(const std::string& value, const std::string& cwd) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t colon = value.find(':', start);
    if (colon == std::string::npos) colon = value.size();
    std::string entry = Trim(value.substr(start, colon - start));
    if (!entry.empty()) out.push_back(ResolveLexically(entry, cwd));
    start = colon + 1;
  }
  return out;
}

bool RunsFromBuildTree() {
  std::string exe = RealPath("/proc/self/exe");
  std::string build_broker = RealPath(std::string(SKILL_MCP_BUILD_ROOT) + "/broker");
  return !exe.empty() && !build_broker.empty() && exe.rfind(build_broker + "/", 0) == 0;
}

std::string DefaultRoot() {
  std::string source_skills = std::string(SKILL_MCP_SOURCE_ROOT) + "/skills";
  if (RunsFromBuildTree() && IsDir(source_skills)) return source_skills;
  return std::string(SKILL_MCP_DATADIR) + "/skills";
}

Roots ResolveRoots(const EnvStore& env) {
  for (const char* var : {"MCP_SKILLS_PATH", "SKILLS_DIR"}) {
    if (auto value = env.GetConfig(var)) {
      Roots r{SplitRootList(*value, WorkingDirectory()), var};
      if (!r.paths.empty()) return r;
    }
  }
  return Roots{{DefaultRoot()}, "default"};
}

}  // namespace skillmcp
