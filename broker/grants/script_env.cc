#include "broker/grants/script_env.h"

#include <algorithm>

namespace skillmcp {
namespace {

void SortUnique(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end());  // std::string compares bytes: byte order
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

}  // namespace

ScriptEnv ComputeScriptEnv(const std::vector<std::string>& granted_env, const IsSetFn& is_set,
                           GrantSource from) {
  ScriptEnv env;
  // Why an allowlist: the script never sees the server's own environment, only these.
  for (std::string_view name : kAmbientVariables) {
    // Why TMPDIR always: every run gets its own scratch directory as TMPDIR
    // (broker/run/scratch_dir.h), whatever the server's own value.
    if (is_set(name) || name == "TMPDIR") env.names.emplace_back(name);
  }
  if (is_set("MCP_DATA_DIR")) env.names.emplace_back("MCP_DATA_DIR");
  for (std::string_view name : kProxyVariables) {
    if (is_set(name)) env.names.emplace_back(name);
  }
  std::vector<std::string> declared_only;
  for (const std::string& name : granted_env) {
    // Why: an unset granted variable is absent, never passed empty.
    if (is_set(name)) {
      env.names.push_back(name);
      declared_only.push_back(name);
    } else {
      env.not_set.push_back(name);
    }
  }
  SortUnique(env.names);
  SortUnique(env.not_set);
  SortUnique(declared_only);
  // Why: standalone, the skill's own SKILL.md chose these; the person approving must see
  // that nobody else granted them.
  if (from == GrantSource::kDeclaration && !declared_only.empty()) {
    std::string list;
    for (const std::string& name : declared_only) {
      if (!list.empty()) list += ", ";
      list += name;
    }
    env.warning = "This script will receive " + list +
                  " from this server's environment only because the skill's own SKILL.md "
                  "asks for " +
                  (declared_only.size() == 1 ? "it" : "them") +
                  "; no MCP_SKILL_RUN grant was given. Approve only if you trust this skill "
                  "with those values, or set MCP_SKILL_RUN to grant variables explicitly.";
  }
  return env;
}

bool IsFencedNetwork(const IsSetFn& is_set) {
  for (std::string_view name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) {
    if (is_set(name)) return true;
  }
  return false;
}

std::optional<std::string> NetworkNote(const IsSetFn& is_set) {
  if (!IsFencedNetwork(is_set)) return std::nullopt;
  return "Outbound traffic on this machine goes through an egress proxy. A host the proxy "
         "does not allow shows up as an HTTP 403 from the loopback proxy or as a plain "
         "timeout; the owner's egress policy decides which hosts are reachable.";
}

}  // namespace skillmcp
