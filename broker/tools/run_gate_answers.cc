#include "broker/tools/run_gate_answers.h"

#include "broker/confirm/payloads.h"

namespace skillmcp {

ToolResult GateAnswer(OrderedJson payload, bool is_error) {
  ToolResult r;
  r.payload = std::move(payload);
  r.is_error = is_error;
  r.indented = true;     // confirmation payloads are 2-space indented (docs/wire.md)
  r.show_hidden = true;  // what the user approves shows every character (docs/wire.md §6)
  return r;
}

ToolResult NoTokens() {
  return GateAnswer(RefusedPayload("Confirmation tokens cannot be signed on this host "
                                   "(libsodium guarded memory is unavailable), so nothing "
                                   "can be confirmed and nothing ran."),
                    true);
}

ToolResult NoSharedRecord(const std::string& why) {
  return GateAnswer(
      RefusedPayload("No confirmation token can be used on this server: " + why + ". Nothing ran."),
      true);
}

ToolResult NotConfirmable() {
  return Refusal("NOT_CONFIRMABLE",
                 "this run cannot be shown faithfully for confirmation (an argument "
                 "is not valid UTF-8), so it cannot be confirmed; pass UTF-8 "
                 "arguments");
}

PromptAnswer ReadPromptAnswer(const Json* result) {
  PromptAnswer a;
  if (result == nullptr || !result->is_object()) return a;
  // The answer is the client's: fields of the wrong type read as absent, never as a
  // throw (json::value() throws on a type mismatch).
  auto action_it = result->find("action");
  const std::string action = action_it != result->end() && action_it->is_string()
                                 ? action_it->get<std::string>()
                                 : std::string();
  auto content_it = result->find("content");
  const bool approve_true = content_it != result->end() && content_it->is_object() &&
                            content_it->contains(kApproveProperty) &&
                            (*content_it)[std::string(kApproveProperty)] == true;
  // Why: only an explicit accept carrying approve == true authorises the run.
  a.approved = action == "accept" && approve_true;
  a.declined = action == "decline" || (action == "accept" && !a.approved);
  return a;
}

ToolResult NotApproved(const PromptAnswer& answer) {
  return GateAnswer(ElicitationCancelledPayload(answer.declined ? ElicitationOutcome::kDeclined
                                                                : ElicitationOutcome::kCancelled),
                    false);
}

// Why one at a time: it bounds what a client can make the host do. Checked before the
// approval is spent, so a busy refusal never burns it.
ToolResult RunInProgress(Approval how) {
  switch (how) {
    case Approval::kToken:
      return Refusal("RUN_IN_PROGRESS",
                     "another skill_run is still running (one at a time); your token is "
                     "still valid, call again when it has finished");
    case Approval::kRoundState:
      return Refusal("RUN_IN_PROGRESS",
                     "another skill_run is still running (one at a time); nothing ran and "
                     "the request state is still valid, retry when it has finished");
    case Approval::kPrompt:
      break;
  }
  return Refusal("RUN_IN_PROGRESS",
                 "another skill_run started while the prompt was open (one at a "
                 "time); nothing ran, ask again when it has finished");
}

}  // namespace skillmcp
