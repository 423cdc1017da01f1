// The answers skill_run's confirmation gives that are the tool's own (the payloads and
// their key order are broker/confirm/payloads.h): the gate's form of an answer, the
// refusals when nothing can be confirmed, the user's answer read off a prompt, and a
// busy refusal worded for how the run was approved (docs/wire.md §6, §8).
#pragma once

#include <string>

#include "broker/tools/tool.h"

namespace skillmcp {

// A confirmation payload as an answer: 2-space indented (docs/wire.md), every character
// shown (docs/wire.md §6).
ToolResult GateAnswer(OrderedJson payload, bool is_error);

// No token can be signed here (libsodium's guarded memory is unavailable).
ToolResult NoTokens();
// No token can be spent here: `why` the host-wide spent record cannot be used.
ToolResult NoSharedRecord(const std::string& why);
// NOT_CONFIRMABLE: the run cannot be shown faithfully (an argument is not valid UTF-8).
ToolResult NotConfirmable();

// The user's answer to the confirmation prompt (an elicitation/create result, or the
// matching inputResponses entry).
struct PromptAnswer {
  bool approved = false;
  bool declined = false;
};
// nullptr, or anything but an explicit accept with approve == true, approves nothing.
PromptAnswer ReadPromptAnswer(const Json* result);
// The answer to a prompt that did not approve: not an error, and nothing is spent.
ToolResult NotApproved(const PromptAnswer& answer);

// How the user approved a run, which decides what a busy refusal says stays valid.
enum class Approval { kToken, kRoundState, kPrompt };
// RUN_IN_PROGRESS for a run approved `how`.
ToolResult RunInProgress(Approval how);

}  // namespace skillmcp
