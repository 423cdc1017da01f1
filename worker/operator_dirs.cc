#include "worker/operator_dirs.h"

namespace skillmcp::worker {

const std::vector<std::string>& OperatorDirs() {
  // why each: /etc/skill-mcp holds skill-mcp.env (packaging/meson.build), which may carry
  // the operator's settings and secrets; /etc/credstore and /etc/credstore.encrypted are
  // where systemd's LoadCredential= reads secrets from (README.md, "Secrets"): a run has
  // no business in any of them.
  static const std::vector<std::string> dirs = {"/etc/skill-mcp", "/etc/credstore",
                                                "/etc/credstore.encrypted"};
  return dirs;
}

}  // namespace skillmcp::worker
