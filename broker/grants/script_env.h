// The script environment (docs/wire.md §4, "Env allowlist"): ONE function decides the
// names, used for the preview (willRun.envNames), the receipt (env) and the real block the
// worker receives, so what the user approves is what runs. Names only; values stay with
// the caller.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/grants/env_lookup.h"
#include "broker/grants/grants.h"

namespace skillmcp {

// Handed to every script when set: a host constant no declaration can widen.
inline constexpr std::array<std::string_view, 5> kAmbientVariables = {"PATH", "HOME", "LANG", "TZ",
                                                                      "TMPDIR"};

// The egress proxy settings of a fenced machine, handed through when set.
inline constexpr std::array<std::string_view, 7> kProxyVariables = {
    "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",        "https_proxy",
    "NO_PROXY",   "no_proxy",    "NODE_USE_ENV_PROXY"};

struct ScriptEnv {
  std::vector<std::string> names;      // sorted (byte order), no repeats: exactly what runs
  std::vector<std::string> not_set;    // granted but not set, sorted; never in `names`
  std::optional<std::string> warning;  // envWarning (standalone declaration mode only)
};

// `granted_env` is the script's granted variable list (GrantedScript::env); `from` says
// whose decision that list is (the warning applies only to kDeclaration).
ScriptEnv ComputeScriptEnv(const std::vector<std::string>& granted_env, const IsSetFn& is_set,
                           GrantSource from);

// A fenced machine: an egress proxy variable (HTTP_PROXY, HTTPS_PROXY or their lower-case
// forms) is set.
bool IsFencedNetwork(const IsSetFn& is_set);

// networkNote for a failed run on a fenced machine; nullopt when not fenced.
std::optional<std::string> NetworkNote(const IsSetFn& is_set);

}  // namespace skillmcp
