#include "worker/operator_dirs.h"

#include <algorithm>

#include "config.h"

namespace skillmcp::worker {
namespace {

// SKILL_MCP_SYSCONFDIR as a path without duplicate or trailing slashes.
std::string Normalised(std::string path) {
  std::string out;
  for (char c : path)
    if (c != '/' || out.empty() || out.back() != '/') out += c;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::vector<std::string> Build() {
  // why each: <sysconfdir>/skill-mcp holds skill-mcp.env (packaging/meson.build), which may
  // carry the operator's settings and secrets, and /etc/skill-mcp is where the package puts
  // it; the credstore directories are every place systemd's LoadCredential= and
  // LoadCredentialEncrypted= read secrets from (systemd.exec(5); docs/deployment.md): a run has no
  // business in any of them. /usr/lib's lie under the /usr rule (and /lib's on a
  // merged-/usr host); /run's under no rule, but a namespaced run's view shows /run.
  std::vector<std::string> dirs = {"/etc/skill-mcp",         "/etc/credstore",
                                   "/etc/credstore.encrypted", "/run/credstore",
                                   "/run/credstore.encrypted", "/usr/lib/credstore",
                                   "/usr/lib/credstore.encrypted"};
  const std::string configured = Normalised(std::string(SKILL_MCP_SYSCONFDIR) + "/skill-mcp");
  if (std::find(dirs.begin(), dirs.end(), configured) == dirs.end()) dirs.push_back(configured);
  return dirs;
}

}  // namespace

const std::vector<std::string>& OperatorDirs() {
  static const std::vector<std::string> dirs = Build();
  return dirs;
}

}  // namespace skillmcp::worker
