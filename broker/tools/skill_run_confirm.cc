// SkillRunTool's confirmation (declared in skill_run.h): the gate once Prepare has said
// what would run. It refuses, issues a preview token, checks a token or round state, or
// asks the user (an elicitation/create, or an input_required round under 2026-07-28);
// nothing is spent here: an approval is spent only when its run starts (Dispatch).
#include <chrono>

#include "broker/confirm/payloads.h"
#include "broker/tools/run_audit_call.h"
#include "broker/tools/run_gate_answers.h"
#include "broker/tools/skill_run.h"

namespace skillmcp {

void SkillRunTool::PassGate(Prepared& prepared, GateStep step, const Json& request_id,
                            ToolDone done) {
  Prepared* p = &prepared;
  const std::optional<std::string>& token = p->token;
  switch (step) {
    case GateStep::kRefuse:
      p->audit->Set(AuditOutcome::kRefused);
      // Mode refuse is an answer, not a failure (docs/wire.md); a gate that cannot be read is.
      return done(GateAnswer(RefusedPayload(deps_.gate.refusal.value_or("")),
                             deps_.gate.refusal.has_value()));
    case GateStep::kElicit:  // handled by the caller
    case GateStep::kIssueToken: {
      // Why before issuing: a token that can never be spent would only ask the user to
      // approve a run that cannot happen.
      if (auto why = deps_.tokens->SharedRecordError()) return done(NoSharedRecord(*why));
      std::optional<IssuedToken> issued =
          deps_.tokens->Issue(p->will_run, Now(), deps_.gate.ttl_seconds);
      if (!issued) return done(NotConfirmable());
      return done(
          GateAnswer(ConfirmationRequiredPayload(p->will_run, *issued, deps_.gate.mode), false));
    }
    case GateStep::kCheckToken:
      break;
  }
  if (deps_.runner->Busy()) return done(RunInProgress(Approval::kToken));
  if (auto refused = CheckApproval(*p, *token, kSkillRunTool)) return done(*refused);
  Dispatch(*p, request_id, done, std::string(*token), kSkillRunTool);
}

void SkillRunTool::Ask(const Prepared& p, const std::string* state, ToolDone done, AskDone ask) {
  std::string request_state;
  if (state != nullptr) {
    request_state = *state;
  } else {
    // Why before issuing: a state that can never be spent would only ask the user to
    // approve a run that cannot happen.
    if (auto why = deps_.tokens->SharedRecordError()) return done(NoSharedRecord(*why));
    std::optional<IssuedToken> issued =
        deps_.tokens->Issue(p.will_run, Now(), deps_.gate.ttl_seconds, kSkillRunRoundTool);
    if (!issued) return done(NotConfirmable());
    request_state = std::move(issued->token);
  }
  OrderedJson prompt{{"method", "elicitation/create"},
                     {"params", ElicitationRequestParams(p.will_run)}};
  ask(OrderedJson{{"inputRequests", {{std::string(kConfirmInputKey), std::move(prompt)}}},
                  {"requestState", std::move(request_state)}});
}

void SkillRunTool::Answer(Prepared& p, const Json& request_id, const RoundCall& round,
                          ToolDone done, AskDone ask) {
  // Checks in the token order (signature, spent, expired, payload), spending nothing yet.
  if (!round.request_state.is_string())
    return done(GateAnswer(RejectionPayload(TokenVerdict::kInvalid), true));
  const std::string state = round.request_state.get<std::string>();
  if (auto refused = CheckApproval(p, state, kSkillRunRoundTool)) return done(*refused);
  const Json* response = nullptr;
  if (round.input_responses.is_object()) {
    auto it = round.input_responses.find(std::string(kConfirmInputKey));
    if (it != round.input_responses.end()) response = &*it;
  }
  // The revision's answer to a retry that lacks the response: ask again, same state.
  if (response == nullptr) return Ask(p, &state, done, ask);
  PromptAnswer answer = ReadPromptAnswer(response);
  if (!answer.approved)
    p.audit->Set(answer.declined ? AuditOutcome::kDeclined : AuditOutcome::kCancelled);
  // Why a decline spends nothing: it authorises nothing, so a replay can do no harm (it
  // declines again), and recording it would let declines fill the host-wide spent record
  // that every confirmation on the host needs. Only the approval that starts a run is spent.
  if (!answer.approved) return done(NotApproved(answer));
  if (deps_.runner->Busy()) return done(RunInProgress(Approval::kRoundState));
  Dispatch(p, request_id, done, state, kSkillRunRoundTool);
}

void SkillRunTool::Elicit(std::shared_ptr<Prepared> p, const Json& request_id, ToolDone done) {
  // Why: one open prompt at a time, so the user always knows which run a prompt is for
  // and a client cannot queue prompts to wear the user down.
  if (prompt_) {
    return done(Refusal("CONFIRMATION_PENDING",
                        "another run is waiting for the user's confirmation; answer that "
                        "prompt first"));
  }
  auto live = std::make_shared<bool>(true);
  prompt_ = OpenPrompt{request_id.dump(), Json(), live, p->audit};
  p->audit->prompt_sent = std::chrono::steady_clock::now();
  Json id = deps_.elicit(
      ElicitationRequestParams(p->will_run), kElicitationTimeoutMs,
      [this, p, request_id, done, live](const Json* result, const Json* error) {
        // Why: an answer to a withdrawn prompt (the call was cancelled) runs nothing.
        if (!*live) return;
        *live = false;
        prompt_.reset();
        PromptAnswer answer = ReadPromptAnswer(error == nullptr ? result : nullptr);
        if (!answer.approved) {
          p->audit->Set(answer.declined ? AuditOutcome::kDeclined : AuditOutcome::kCancelled);
          return done(NotApproved(answer));
        }
        // Why: the catalogue may have been replaced while the prompt was open
        // (SKILL_MCP_WATCH); an approval starts only what is still declared and granted.
        ScriptLookup still = deps_.view.grants->Lookup(p->run.skill, p->run.script);
        if (still.refusal != ScriptRefusal::kNone) {
          return done(Refusal("DRAFT_CHANGED",
                              "the skill's declaration changed while the prompt was open; "
                              "nothing ran. Call skill_run again for a fresh prompt"));
        }
        if (deps_.runner->Busy()) return done(RunInProgress(Approval::kPrompt));
        Dispatch(*p, request_id, done, std::nullopt, kSkillRunTool);
      });
  if (prompt_ && prompt_->live == live) prompt_->elicitation_id = std::move(id);
}

std::optional<ToolResult> SkillRunTool::CheckApproval(const Prepared& p, const std::string& token,
                                                      std::string_view domain) {
  // Why check before spending: the argument checks come after the gate (docs/wire.md
  // order), and a genuine token for arguments that can never run must not be spent, or
  // a client could fill the host-wide spent record without running anything.
  std::string detail;
  TokenVerdict v = deps_.tokens->Check(token, p.will_run, Now(), domain, &detail);
  if (v == TokenVerdict::kDraftChanged) {
    // The same answer for a token and a round state: a fresh preview, the old one left
    // unspent.
    std::optional<IssuedToken> fresh =
        deps_.tokens->Issue(p.will_run, Now(), deps_.gate.ttl_seconds);
    if (!fresh) return GateAnswer(RejectionPayload(TokenVerdict::kInvalid), true);
    return GateAnswer(DraftChangedPayload(p.will_run, *fresh, deps_.gate.mode), true);
  }
  if (v != TokenVerdict::kValid) return GateAnswer(RejectionPayload(v, detail), true);
  return std::nullopt;
}

}  // namespace skillmcp
