#include "broker/tools/skill_run.h"

#include <time.h>

#include <algorithm>
#include <chrono>

#include "broker/confirm/payloads.h"
#include "broker/grants/script_env.h"
#include "broker/tools/run_audit_call.h"
#include "broker/tools/run_gate_answers.h"
#include "broker/tools/run_receipt.h"
#include "broker/tools/tool_args.h"

namespace skillmcp {
namespace {

// Why: every refusal says which run it refused, whatever part of skill_run it came from.
ToolResult NameRun(ToolResult r, const Json& args) {
  auto message = r.payload.find("message");
  if (message == r.payload.end() || !message->is_string() || !args.is_object()) return r;
  auto name = args.find("name");
  auto script = args.find("script");
  if (name == args.end() || !name->is_string() || script == args.end() || !script->is_string()) {
    return r;
  }
  *message = "skill_run refused script \"" + script->get<std::string>() + "\" of skill \"" +
             name->get<std::string>() + "\": " + message->get<std::string>();
  return r;
}

// Content checks on args that come after the gate, in docs/wire.md order.
std::optional<ToolResult> CheckArgContent(const std::vector<std::string>& args) {
  size_t total = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    // Why: argv is handed to execve, where a NUL would silently cut the argument.
    if (args[i].find('\0') != std::string::npos) {
      return ArgumentError("args", "\"args[" + std::to_string(i) + "]\" contains a NUL byte");
    }
    total += args[i].size();
  }
  if (total > kMaxRunArgBytes) {
    return ArgumentError("args", "the arguments add up to " + std::to_string(total) +
                                     " bytes, over the " + std::to_string(kMaxRunArgBytes) +
                                     "-byte limit");
  }
  return std::nullopt;
}

}  // namespace

SkillRunTool::SkillRunTool(SkillRunDeps deps) : deps_(std::move(deps)) {}

SkillRunTool::~SkillRunTool() {
  // why: the broker is going (the client left); a prompt nobody can answer and a run that is
  // killed now are outcomes too, and each call leaves its one record.
  for (RunAuditCall* call : {prompt_ ? prompt_->audit.get() : nullptr, running_audit_.get()}) {
    if (call == nullptr || call->written) continue;
    call->Set(AuditOutcome::kCancelled);
    call->facts.reason = "the client left before the call was answered";
    Record(*call, nullptr);
  }
}

std::shared_ptr<RunAuditCall> SkillRunTool::StartAudit(const Json& args) const {
  auto call = std::make_shared<RunAuditCall>();
  AuditFacts& f = call->facts;
  if (const AuditConnection* c = deps_.audit.connection) {
    f.peer = c->peer;
    f.client_name = c->client_name;
    f.client_version = c->client_version;
  }
  if (args.is_object()) {
    auto name = args.find("name");
    auto script = args.find("script");
    if (name != args.end() && name->is_string()) f.skill = name->get<std::string>();
    if (script != args.end() && script->is_string()) f.script = script->get<std::string>();
  }
  f.confirm_mode = std::string(ConfirmModeName(deps_.gate.mode));
  f.layers = deps_.audit.layers;
  return call;
}

ToolDone SkillRunTool::Audited(ToolDone answer, const Json& args,
                               std::shared_ptr<RunAuditCall> audit) {
  return [this, answer, args, audit](ToolResult r) {
    r = NameRun(std::move(r), args);
    Record(*audit, &r);
    answer(std::move(r));
  };
}

void SkillRunTool::Record(RunAuditCall& call, const ToolResult* result) {
  if (call.written) return;
  if (call.mark == RunAuditCall::Mark::kDefault) {
    if (result == nullptr || !result->is_error) return;
    call.facts.outcome = AuditOutcome::kRefused;
  }
  if (result != nullptr && call.facts.outcome != AuditOutcome::kRan && call.facts.reason.empty())
    ReadRefusal(*result, &call.facts);
  call.written = true;
  if (deps_.audit.emit) deps_.audit.emit(call.facts);
}

int64_t SkillRunTool::Now() const {
  if (deps_.now) return deps_.now();
  return static_cast<int64_t>(time(nullptr));
}

void SkillRunTool::Call(const Json& args, const Json& request_id, bool client_elicits,
                        ToolDone answer) {
  auto p = std::make_shared<Prepared>();
  p->audit = StartAudit(args);
  ToolDone done = Audited(std::move(answer), args, p->audit);
  if (auto refusal = Prepare(args, p.get())) return done(*refusal);

  // 7. the gate: one decision function says what happens (broker/confirm/gate_config.h).
  if (deps_.tokens == nullptr) return done(NoTokens());
  GateStep step = NextGateStep(deps_.gate, client_elicits, p->token.has_value());
  if (step == GateStep::kElicit) return Elicit(p, request_id, done);
  PassGate(*p, step, request_id, done);
}

void SkillRunTool::CallRound(const Json& args, const Json& request_id, const RoundCall& round,
                             ToolDone answer, AskDone ask) {
  Prepared p;
  p.audit = StartAudit(args);
  ToolDone done = Audited(std::move(answer), args, p.audit);
  if (auto refusal = Prepare(args, &p)) return done(*refusal);
  if (deps_.tokens == nullptr) return done(NoTokens());
  // Why the declared capabilities alone decide: a client that does not offer elicitation
  // must never be sent an input_required it cannot answer (docs/wire.md §8), so it gets the
  // preview-and-token flow like its first request did; a requestState or inputResponses it
  // sends is ignored there, and an answer alone authorises nothing.
  GateStep step = NextGateStep(deps_.gate, round.client_elicits, p.token.has_value());
  if (step != GateStep::kElicit) return PassGate(p, step, request_id, done);
  // Why an answer without a state is asked again: nothing binds it to this run.
  if (round.request_state.is_null()) return Ask(p, nullptr, done, ask);
  Answer(p, request_id, round, done, ask);
}

void SkillRunTool::Dispatch(Prepared& p, const Json& request_id, ToolDone done,
                            std::optional<std::string> token, std::string_view domain) {
  // 8. argument checks, after the gate (docs/wire.md order).
  if (auto err = CheckArgContent(p.run.args)) return done(*err);
  ReceiptContext context = ReceiptContextOf(p.run);
  context.network_note = NetworkNote(deps_.is_set);
  // Why spend in the runner's commit step: only once everything that can refuse the run
  // (uid lease, scratch directory, worker) has succeeded is the approval used up; a run
  // that cannot start leaves it valid for the retry. The spend itself can still refuse
  // (another broker spent it first: TOKEN_REUSED), and then nothing runs.
  TokenVerdict spent = TokenVerdict::kValid;
  std::string detail;
  int64_t expires_at = 0;
  Runner::Commit commit = [&] {
    if (!token) return true;
    spent = deps_.tokens->CheckAndSpend(*token, p.will_run, Now(), &detail, domain, &expires_at);
    return spent == TokenVerdict::kValid;
  };
  running_ = request_id.dump();
  std::shared_ptr<RunAuditCall> audit = p.audit;
  running_audit_ = audit;
  std::optional<StartRefusal> refused = deps_.runner->StartCommitted(
      std::move(p.run), std::move(commit),
      [this, done, audit, context = std::move(context)](RunResult result) {
        running_.reset();
        running_audit_.reset();
        RecordRunResult(result, audit.get());
        if (result.failure)
          return done(Refusal("RUN_SETUP_FAILED", DescribeSetupFailure(*result.failure)));
        done(ToolResult{BuildReceipt(context, result)});
      });
  if (!refused) {
    // The run started: how it was confirmed, and how long after its preview.
    AuditFacts& f = audit->facts;
    if (!token) {
      f.confirm = "elicitation";
      if (audit->prompt_sent)
        f.confirm_wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - *audit->prompt_sent)
                                .count();
    } else {
      f.confirm = domain == kSkillRunRoundTool ? "input-required" : "token";
      // The token carries its expiry, not its issue: issued ttl before it, whole seconds.
      f.confirm_wait_ms =
          std::max<int64_t>(0, Now() - (expires_at - deps_.gate.ttl_seconds)) * 1000;
    }
    return;
  }
  running_.reset();
  running_audit_.reset();
  if (spent != TokenVerdict::kValid) return done(GateAnswer(RejectionPayload(spent, detail), true));
  done(Refusal("RUN_NOT_STARTED", DescribeStartRefusal(*refused)));
}

void SkillRunTool::Cancel(const Json& request_id) {
  std::string key = request_id.dump();
  if (prompt_ && prompt_->call == key) {
    // Why withdraw at once: the user must not approve a call nobody waits for, and the
    // slot must free now, not when the prompt would have timed out.
    *prompt_->live = false;
    Json elicitation_id = std::move(prompt_->elicitation_id);
    // why: the call ends here with no answer to the client, so its record is written here.
    std::shared_ptr<RunAuditCall> audit = std::move(prompt_->audit);
    prompt_.reset();
    audit->Set(AuditOutcome::kCancelled);
    audit->facts.reason = "the client cancelled the call while the prompt was open";
    Record(*audit, nullptr);
    if (deps_.withdraw) deps_.withdraw(elicitation_id);
  }
  if (running_ && *running_ == key) {
    if (running_audit_) running_audit_->cancel_asked = true;
    deps_.runner->Cancel();
  }
}

}  // namespace skillmcp
