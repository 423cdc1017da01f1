#include "broker/confirm/payloads.h"

#include <ctime>

namespace skillmcp {
namespace {

using nlohmann::ordered_json;

std::string Instruction(ConfirmMode mode, const IssuedToken& token) {
  const std::string expiry = FormatIsoUtc(token.expires_at);
  if (mode == ConfirmMode::kAuto) {
    return "Read preview.willRun. If it is what you intend to run, call skill_run again with "
           "the same name, script and args and add this confirmToken. The token works once "
           "and lapses at " +
           expiry + ".";
  }
  return "Do not call again yet. Show the user preview.willRun (skill, argv, working "
         "directory, timeout and the variable names the script receives) and ask in the chat "
         "whether to run it. Only after the user says yes, call skill_run again with the same "
         "name, script and args and add this confirmToken. The token works once and lapses "
         "at " +
         expiry + ".";
}

std::string JoinOrNone(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

ordered_json Rejected(const char* error) {
  ordered_json out;
  out["status"] = "confirmation-rejected";
  out["confirmed"] = false;
  out["dispatched"] = false;
  out["error"] = error;
  return out;
}

void AddToken(ordered_json& out, const IssuedToken& token) {
  out["confirmToken"] = token.token;
  out["expiresAt"] = FormatIsoUtc(token.expires_at);
  out["ttlSeconds"] = token.ttl_seconds;
}

}  // namespace

std::string FormatIsoUtc(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "1970-01-01T00:00:00.000Z";
  char buffer[64];
  size_t n = std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return n == 0 ? std::string("1970-01-01T00:00:00.000Z") : std::string(buffer, n);
}

ordered_json PreviewJson(const WillRun& will_run) {
  ordered_json preview;
  preview["dryRun"] = true;
  preview["willRun"] = WillRunJson(will_run);
  preview["note"] =
      "Nothing has run. willRun is the exact run the confirmToken allows: the interpreter, "
      "the argv, the working directory, the time limit and the names (never the values) of "
      "the variables the script receives. Any change to it needs a new confirmation.";
  return preview;
}

ordered_json ConfirmationRequiredPayload(const WillRun& will_run, const IssuedToken& token,
                                         ConfirmMode mode) {
  ordered_json out;
  out["status"] = "confirmation-required";
  out["confirmed"] = false;
  out["dispatched"] = false;
  out["action"] = kRunAction;
  out["preview"] = PreviewJson(will_run);
  AddToken(out, token);
  out["instruction"] = Instruction(mode, token);
  return out;
}

ordered_json RejectionPayload(TokenVerdict verdict) {
  ordered_json out = Rejected(TokenErrorCode(verdict));
  switch (verdict) {
    case TokenVerdict::kReused:
      out["note"] =
          "This confirmToken has already been used; each token runs a script once. "
          "Call skill_run without a token to get a new preview and token.";
      break;
    case TokenVerdict::kExpired:
      out["note"] =
          "This confirmToken has lapsed. Call skill_run without a token to get a "
          "new preview and token, and confirm again.";
      break;
    case TokenVerdict::kSpentSetFull:
      out["note"] =
          "Too many runs were confirmed within one token lifetime for this server "
          "to track another; nothing ran. Wait for older tokens to lapse, then "
          "ask for a new token.";
      break;
    default:
      out["error"] = TokenErrorCode(TokenVerdict::kInvalid);
      out["note"] =
          "This confirmToken was not issued by this server process (or it was "
          "altered, cut short or belongs to another tool), so nothing ran. Call "
          "skill_run without a token to get a preview and a fresh token.";
      break;
  }
  return out;
}

ordered_json DraftChangedPayload(const WillRun& fresh, const IssuedToken& fresh_token,
                                 ConfirmMode mode) {
  ordered_json out = Rejected(TokenErrorCode(TokenVerdict::kDraftChanged));
  out["reason"] = "payload-changed";
  out["note"] =
      "The skill, script, arguments or environment differ from what this "
      "confirmToken was issued for, so nothing ran. Below is the preview of the run "
      "as now requested, with a new token; the old token is still unused.";
  out["preview"] = PreviewJson(fresh);
  AddToken(out, fresh_token);
  out["instruction"] = Instruction(mode, fresh_token);
  return out;
}

ordered_json RefusedPayload(const std::string& why) {
  ordered_json out;
  out["confirmed"] = false;
  out["dispatched"] = false;
  out["action"] = kRunAction;
  out["reason"] = "confirmation-unsupported";
  out["note"] = why.empty() ? std::string(
                                  "This server is set to refuse runs it cannot confirm through "
                                  "a client prompt (MCP_CONFIRM_MODE=refuse), and this client "
                                  "cannot show one, so nothing ran. The owner can set "
                                  "MCP_CONFIRM_MODE=ask-user or use a client that supports "
                                  "elicitation.")
                            : why;
  return out;
}

ordered_json ElicitationCancelledPayload(ElicitationOutcome outcome) {
  ordered_json out;
  out["confirmed"] = false;
  out["cancelled"] = true;
  out["action"] = kRunAction;
  out["note"] = outcome == ElicitationOutcome::kDeclined
                    ? "The user declined this run, so nothing ran. Do not retry it unless the "
                      "user asks for it again."
                    : "The confirmation prompt was dismissed without an answer, so nothing "
                      "ran. Ask the user before trying again.";
  return out;
}

ordered_json ElicitationRequestParams(const WillRun& will_run) {
  std::string message = "Run a script from the skill \"" + will_run.skill + "\"?\n\n";
  message += "Interpreter: " + will_run.interpreter + "\n";
  // argv as a JSON array, so spaces and quotes inside arguments stay unambiguous.
  message +=
      "Command (argv): " +
      nlohmann::json(will_run.argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  message += "Working directory: " + will_run.cwd + "\n";
  message += "Time limit: " + std::to_string(will_run.timeout_ms / 1000) + " s (" +
             std::to_string(will_run.timeout_ms) + " ms)\n";
  message += "Variables it receives (names only): " + JoinOrNone(will_run.env_names) + "\n";
  if (!will_run.env_not_set.empty()) {
    message +=
        "Granted but not set here (it will not get them): " + JoinOrNone(will_run.env_not_set) +
        "\n";
  }
  if (will_run.env_warning) message += "Warning: " + *will_run.env_warning + "\n";

  ordered_json approve;
  approve["type"] = "boolean";
  approve["title"] = "Run this script";
  approve["description"] = "Choose true to run it once exactly as shown; false runs nothing.";
  ordered_json schema;
  schema["type"] = "object";
  schema["properties"] = ordered_json::object();
  schema["properties"][std::string(kApproveProperty)] = std::move(approve);
  schema["required"] = ordered_json::array({std::string(kApproveProperty)});

  ordered_json params;
  params["message"] = std::move(message);
  params["requestedSchema"] = std::move(schema);
  return params;
}

}  // namespace skillmcp
