// The confirmation gate's settings (docs/wire.md §6), read once at boot.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/grants/env_lookup.h"

namespace skillmcp {

enum class ConfirmMode { kAskUser, kAuto, kRefuse };

std::string_view ConfirmModeName(ConfirmMode mode);  // "ask-user" | "auto" | "refuse"

inline constexpr int64_t kDefaultTtlSeconds = 600;
inline constexpr int64_t kMaxConfigTtlSeconds = 86400;  // one day

struct GateConfig {
  ConfirmMode mode = ConfirmMode::kAskUser;  // MCP_CONFIRM_MODE
  bool elicitation = true;                   // MCP_CONFIRM_ELICITATION
  int64_t ttl_seconds = kDefaultTtlSeconds;  // MCP_CONFIRM_TTL_SECONDS
  // Set when a value is unusable in a way that makes the gate refuse EVERY run (a bad
  // TTL): prose for the refusal's note.
  std::optional<std::string> refusal;
  // One line per variable that was not understood, for the caller to log once.
  std::vector<std::string> warnings;
};

GateConfig ParseGateConfig(const GetFn& get);

// What the gate does with one skill_run call (after every other refusal has passed).
enum class GateStep {
  kRefuse,      // RefusedPayload (mode refuse, or GateConfig::refusal with its note)
  kElicit,      // ask the user through elicitation/create
  kIssueToken,  // ConfirmationRequiredPayload: nothing runs yet
  kCheckToken,  // ConfirmTokens::CheckAndSpend against the recomputed willRun
};

// Whether a client may be sent a form-mode elicitation/create: it negotiated a revision that
// has elicitation (2025-06-18 or later) and its `capabilities.elicitation` object offers form
// mode (2025-11-25: `{}` and `{form: {}}` do, `{url: {}}` alone does not).
bool ClientTakesFormPrompt(const nlohmann::json& capabilities, std::string_view protocol_version);

// `client_elicits`: the client declared the elicitation capability. A token sent by a
// client that can be prompted is not used: the user is asked instead.
GateStep NextGateStep(const GateConfig& config, bool client_elicits, bool has_token);

}  // namespace skillmcp
