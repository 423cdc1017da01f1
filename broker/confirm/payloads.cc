#include "broker/confirm/payloads.h"

#include <ctime>

#include "broker/confirm/shown_text.h"

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

std::string ShownList(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += ShowUntrusted(name);
  }
  return out;
}

ordered_json Rejected(const char* error) {
  ordered_json out;
  out["status"] = "confirmation-rejected";
  out["confirmed"] = false;
  out["dispatched"] = false;
  out["error"] = error;
  out["action"] = kRunAction;
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
      "the argv, the working directory, the time limit, the names (never the values) of "
      "the variables the script receives and, where shown, the only hosts it may reach. Any "
      "change to it needs a new confirmation.";
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

ordered_json RejectionPayload(TokenVerdict verdict, const std::string& detail) {
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
    case TokenVerdict::kSharedFull:
      // Why its own note: the record is shared by every broker on the host, so being full
      // says nothing about this client's own runs.
      out["note"] =
          "Nothing ran, and this confirmation is still unused: the host-wide record "
          "of used confirmations (" +
          detail +
          "), shared by every skill-mcp server on this host that signs with the "
          "same MCP_CONFIRM_SECRET, is full. It empties as older confirmations "
          "lapse; call again later (with a new token if this one has lapsed), and "
          "tell the owner of this server if it persists.";
      break;
    case TokenVerdict::kUnrecorded:
      out["note"] =
          "Nothing ran: this server could not record that the confirmToken is used (" + detail +
          "), and a use nobody else can see could let the same token run again elsewhere. "
          "The token is still unused. The owner can fix the state directory "
          "(SKILL_MCP_STATE_DIR, see skill-mcp(1)); then call again with the same token.";
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
  // Why this order and this form: the fixed facts come first, so no argument can push
  // them out of view, and every untrusted value is one quoted line with its hidden
  // characters escaped and a long one cut (broker/confirm/shown_text.h), so no argument
  // can draw a line of its own.
  const std::string script = will_run.argv.empty() ? std::string() : will_run.argv[0];
  std::string message = "Run a script from a skill? Nothing runs unless you approve.\n\n";
  message += "Skill: \"" + ShowUntrusted(will_run.skill) + "\"\n";
  message += "Script: \"" + ShowUntrusted(script) + "\"\n";
  message += "Interpreter: " + ShowUntrusted(will_run.interpreter);
  if (will_run.interpreter_path)
    message += ", the binary \"" + ShowUntrusted(*will_run.interpreter_path, 1024) + "\"";
  message += "\n";
  message += "Working directory: \"" + ShowUntrusted(will_run.cwd, 1024) + "\"\n";
  message += "Time limit: " + std::to_string(will_run.timeout_ms / 1000) + " s (" +
             std::to_string(will_run.timeout_ms) + " ms)\n";
  message += "Variables it receives (names only): " + ShownList(will_run.env_names) + "\n";
  if (!will_run.env_not_set.empty()) {
    message +=
        "Granted but not set here (it will not get them): " + ShownList(will_run.env_not_set) +
        "\n";
  }
  if (will_run.env_warning)
    message += "Warning: " + ShowUntrusted(*will_run.env_warning, 2000) + "\n";
  if (will_run.egress) {
    std::string hosts;
    for (const EgressRule& rule : *will_run.egress) {
      std::string ports;
      for (uint16_t port : rule.ports) ports += (ports.empty() ? "" : ", ") + std::to_string(port);
      hosts += std::string(hosts.empty() ? "" : "; ") + "\"" + ShowUntrusted(rule.host) +
               "\" (port" + (rule.ports.size() == 1 ? " " : "s ") + ports + ")";
    }
    message += hosts.empty() ? "Network: none (it reaches no host)\n"
                             : "Network: only these hosts: " + hosts + "\n";
  }
  const size_t argc = will_run.argv.empty() ? 0 : will_run.argv.size() - 1;
  message += "Arguments (" + std::to_string(argc) +
             "), one per line, each in quotes:" + std::string(argc == 0 ? " none" : "") + "\n";
  for (size_t i = 1; i < will_run.argv.size(); ++i) {
    message += "  " + std::to_string(i) + ". \"" + ShowUntrusted(will_run.argv[i]) + "\"\n";
  }

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
