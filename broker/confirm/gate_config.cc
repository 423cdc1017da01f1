#include "broker/confirm/gate_config.h"

namespace skillmcp {
namespace {

// Config values are echoed in warnings; keep a pasted blob from flooding the log.
std::string Shown(const std::string& value) {
  constexpr size_t kShown = 40;
  if (value.size() <= kShown) return "\"" + value + "\"";
  return "\"" + value.substr(0, kShown) + "...\"";
}

// Decimal digits only, 1..kMaxConfigTtlSeconds; nullopt otherwise.
std::optional<int64_t> ParseTtl(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > kMaxConfigTtlSeconds) return std::nullopt;
  return value;
}

}  // namespace

std::string_view ConfirmModeName(ConfirmMode mode) {
  switch (mode) {
    case ConfirmMode::kAskUser:
      return "ask-user";
    case ConfirmMode::kAuto:
      return "auto";
    case ConfirmMode::kRefuse:
      return "refuse";
  }
  return "refuse";
}

GateConfig ParseGateConfig(const GetFn& get) {
  GateConfig config;
  if (std::optional<std::string> mode = get("MCP_CONFIRM_MODE")) {
    if (*mode == "ask-user") {
      config.mode = ConfirmMode::kAskUser;
    } else if (*mode == "auto") {
      config.mode = ConfirmMode::kAuto;
    } else if (*mode == "refuse") {
      config.mode = ConfirmMode::kRefuse;
    } else {
      // Why refuse: a mode nobody can read must not be guessed into one that runs scripts.
      config.mode = ConfirmMode::kRefuse;
      config.warnings.push_back("MCP_CONFIRM_MODE is " + Shown(*mode) +
                                ", which is not ask-user, auto or refuse; acting as refuse "
                                "(clients without a prompt cannot run scripts).");
    }
  }
  if (std::optional<std::string> elicitation = get("MCP_CONFIRM_ELICITATION")) {
    if (*elicitation == "off") {
      config.elicitation = false;
    } else if (*elicitation != "on") {
      // Why on: prompting the user is the stricter reading; "off" must be spelled out.
      config.warnings.push_back("MCP_CONFIRM_ELICITATION is " + Shown(*elicitation) +
                                ", which is not on or off; acting as on (clients that can "
                                "show a prompt are asked there).");
    }
  }
  if (std::optional<std::string> ttl = get("MCP_CONFIRM_TTL_SECONDS")) {
    std::optional<int64_t> seconds = ParseTtl(*ttl);
    if (seconds) {
      config.ttl_seconds = *seconds;
    } else {
      // Why refuse everything: a lifetime nobody meant (too short to use or far too long
      // to be safe) is not guessed; the owner fixes the value.
      std::string sentence = "MCP_CONFIRM_TTL_SECONDS is " + Shown(*ttl) +
                             ", which is not a whole number of seconds from 1 to " +
                             std::to_string(kMaxConfigTtlSeconds) +
                             "; every skill_run is refused until the owner fixes it.";
      config.refusal = sentence;
      config.warnings.push_back(sentence);
    }
  }
  return config;
}

bool ClientTakesFormPrompt(const nlohmann::json& capabilities, std::string_view protocol_version) {
  // Why the revision: before 2025-06-18 elicitation/create does not exist, so a client on
  // such a revision cannot answer it whatever it lists (ISO dates compare as strings).
  if (protocol_version < std::string_view("2025-06-18")) return false;
  if (!capabilities.is_object()) return false;
  auto it = capabilities.find("elicitation");
  if (it == capabilities.end() || !it->is_object()) return false;
  // Why: a server must not send a mode the client did not offer; naming no mode at all
  // means form (the form-only 2025-06-18 shape).
  return it->contains("form") || !it->contains("url");
}

GateStep NextGateStep(const GateConfig& config, bool client_elicits, bool has_token) {
  // Why first: a configuration nobody can read refuses everything rather than guessing.
  if (config.refusal) return GateStep::kRefuse;
  // Why prefer the prompt: the person answers it directly, where a token only carries the
  // model's word that the person agreed.
  if (client_elicits && config.elicitation) return GateStep::kElicit;
  // Why before the token: in refuse mode no token is honoured, whoever issued it.
  if (config.mode == ConfirmMode::kRefuse) return GateStep::kRefuse;
  return has_token ? GateStep::kCheckToken : GateStep::kIssueToken;
}

}  // namespace skillmcp
