#include "broker/tools/skill_run.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "broker/catalogue/fsutil.h"
#include "broker/confirm/payloads.h"
#include "broker/grants/script_env.h"
#include "broker/tools/file_reader.h"
#include "broker/tools/run_receipt.h"
#include "broker/tools/tool_args.h"
#include "shared/relpath.h"

namespace skillmcp {
namespace {

ToolResult Gate(OrderedJson payload, bool is_error) {
  ToolResult r;
  r.payload = std::move(payload);
  r.is_error = is_error;
  r.indented = true;  // confirmation payloads are 2-space indented (docs/wire.md)
  r.show_hidden = true;  // what the user approves shows every character (docs/wire.md §6)
  return r;
}

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

ToolResult NoTokens() {
  return Gate(RefusedPayload("Confirmation tokens cannot be signed on this host "
                             "(libsodium guarded memory is unavailable), so nothing "
                             "can be confirmed and nothing ran."),
              true);
}

ToolResult NoSharedRecord(const std::string& why) {
  return Gate(
      RefusedPayload("No confirmation token can be used on this server: " + why + ". Nothing ran."),
      true);
}

ToolResult NotConfirmable() {
  return Refusal("NOT_CONFIRMABLE",
                 "this run cannot be shown faithfully for confirmation (an argument "
                 "is not valid UTF-8), so it cannot be confirmed; pass UTF-8 "
                 "arguments");
}

// The user's answer to the confirmation prompt (an elicitation/create result, or the
// matching inputResponses entry). nullptr: no usable answer (an error, a timeout).
struct PromptAnswer {
  bool approved = false;
  bool declined = false;
};

PromptAnswer ReadPromptAnswer(const Json* result) {
  PromptAnswer a;
  if (result == nullptr || !result->is_object()) return a;
  // The answer is the client's: fields of the wrong type read as absent, never as a
  // throw (json::value() throws on a type mismatch).
  auto action_it = result->find("action");
  const std::string action =
      action_it != result->end() && action_it->is_string() ? action_it->get<std::string>()
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

// The answer to a prompt that did not approve: not an error, and nothing is spent.
ToolResult NotApproved(const PromptAnswer& answer) {
  return Gate(ElicitationCancelledPayload(answer.declined ? ElicitationOutcome::kDeclined
                                                          : ElicitationOutcome::kCancelled),
              false);
}

// How the user approved a run, which decides what a busy refusal says stays valid.
enum class Approval { kToken, kRoundState, kPrompt };

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

// What the user approves, read off the prepared run, so the preview, the token and the
// run cannot disagree; only the names not set and the warning are the preview's own.
WillRun WillRunOf(const PreparedRun& run, const ScriptEnv& env) {
  WillRun w;
  w.skill = run.skill;
  w.interpreter = run.interpreter;
  w.argv.push_back(run.script);
  w.argv.insert(w.argv.end(), run.args.begin(), run.args.end());
  w.cwd = run.skill_dir_path;
  w.timeout_ms = run.timeout_ms;
  w.env_names = run.env_names;
  w.env_not_set = env.not_set;
  w.env_warning = env.warning;
  w.script_identity = run.identity.Binding();
  return w;
}

}  // namespace

SkillRunTool::SkillRunTool(SkillRunDeps deps) : deps_(std::move(deps)) {}

int64_t SkillRunTool::Now() const {
  if (deps_.now) return deps_.now();
  return static_cast<int64_t>(time(nullptr));
}

std::optional<ToolResult> SkillRunTool::Prepare(const Json& args, Prepared* out) {
  std::string name, script;
  PreparedRun& run = out->run;
  if (auto err = RequireString(args, "name", &name)) return err;
  if (auto err = RequireString(args, "script", &script)) return err;
  if (auto err = StringArray(args, "args", false, 0, kMaxRunArgs, &run.args)) return err;
  if (auto err = OptionalString(args, "confirmToken", &out->token)) return err;

  // 1. unknown skill
  const Skill* skill = deps_.view.FindSkill(name);
  if (skill == nullptr) return UnknownSkill(deps_.view, name);
  // 2. runs blocked on this host
  if (deps_.runs_blocked) return Refusal("RUNS_BLOCKED", *deps_.runs_blocked);
  // 3-4. undeclared or ungranted, then interpreter not runnable (declaration lookup first)
  ScriptLookup lookup = deps_.view.grants->Lookup(name, script);
  switch (lookup.refusal) {
    case ScriptRefusal::kNone: break;
    case ScriptRefusal::kUnknownSkill: return UnknownSkill(deps_.view, name);
    case ScriptRefusal::kUndeclared: return Refusal("SCRIPT_NOT_DECLARED", lookup.message);
    case ScriptRefusal::kUngranted: return Refusal("SCRIPT_NOT_GRANTED", lookup.message);
    case ScriptRefusal::kInterpreterUnavailable:
      return Refusal("INTERPRETER_UNAVAILABLE", lookup.message);
  }
  const GrantedScript& granted = *lookup.script;
  // 5. the path: string check (its own message), then resolved beneath the skill
  // directory, a regular file (OpenBundleFile checks the string again, as every read does).
  if (PathRefusal r = CheckRelativePath(script); r != PathRefusal::kNone) {
    return Refusal("PATH_REFUSED", std::string("script path refused: ") + DescribePathRefusal(r));
  }
  OpenedFile opened = OpenBundleFile(skill->dir.get(), script);
  if (!opened.fd) return Refusal("PATH_REFUSED", "script \"" + script + "\": " + opened.error);
  // node's module identity (__filename, relative require) is the real path of the file
  // that was checked, read back from its descriptor.
  std::optional<std::string> real = RealPathOfFd(opened.fd.get(), skill->source + "/" + script);
  if (!real) return Refusal("PATH_REFUSED", "script \"" + script + "\": cannot resolve its path");
  // why: the token binds the bytes the user approved, and the run gets a sealed copy of
  // exactly those bytes, so a script changed after the preview is DRAFT_CHANGED and an
  // in-place write after the confirmation changes nothing that runs.
  std::optional<SealedScript> sealed = SealScript(opened.fd.get());
  if (!sealed) {
    const std::string why =
        errno == EAGAIN ? std::string("it changed while it was being read; call again")
        : errno == EFBIG
            ? "it is over the " + std::to_string(kMaxScriptBytes >> 20) + " MiB script limit"
            : std::string("cannot be read: ") + std::strerror(errno);
    return Refusal("PATH_REFUSED", "script \"" + script + "\": " + why);
  }
  run.skill = skill->name;
  run.interpreter = granted.interpreter;
  run.skill_dir_fd = skill->dir.get();
  run.skill_dir_path = skill->source;
  run.script = granted.script;
  run.script_fd = std::move(sealed->fd);
  run.identity = sealed->identity;
  run.script_real_path = std::move(*real);
  run.timeout_ms = granted.timeout_ms;

  ScriptEnv env = ComputeScriptEnv(granted.env, deps_.is_set, deps_.view.grants->from);
  run.env_names = env.names;
  out->will_run = WillRunOf(run, env);
  return std::nullopt;
}

void SkillRunTool::Call(const Json& args, const Json& request_id, bool client_elicits,
                        ToolDone answer) {
  ToolDone done = [answer, args](ToolResult r) { answer(NameRun(std::move(r), args)); };
  auto p = std::make_shared<Prepared>();
  if (auto refusal = Prepare(args, p.get())) return done(*refusal);

  // 6. the gate: one decision function says what happens (broker/confirm/gate_config.h).
  if (deps_.tokens == nullptr) return done(NoTokens());
  GateStep step = NextGateStep(deps_.gate, client_elicits, p->token.has_value());
  if (step == GateStep::kElicit) return Elicit(p, request_id, done);
  PassGate(*p, step, request_id, done);
}

void SkillRunTool::PassGate(Prepared& prepared, GateStep step, const Json& request_id,
                            ToolDone done) {
  Prepared* p = &prepared;
  const std::optional<std::string>& token = p->token;
  switch (step) {
    case GateStep::kRefuse:
      // Mode refuse is an answer, not a failure (docs/wire.md); a gate that cannot be read is.
      return done(
          Gate(RefusedPayload(deps_.gate.refusal.value_or("")), deps_.gate.refusal.has_value()));
    case GateStep::kElicit:  // handled by the caller
    case GateStep::kIssueToken: {
      // Why before issuing: a token that can never be spent would only ask the user to
      // approve a run that cannot happen.
      if (auto why = deps_.tokens->SharedRecordError()) return done(NoSharedRecord(*why));
      std::optional<IssuedToken> issued =
          deps_.tokens->Issue(p->will_run, Now(), deps_.gate.ttl_seconds);
      if (!issued) return done(NotConfirmable());
      return done(Gate(ConfirmationRequiredPayload(p->will_run, *issued, deps_.gate.mode), false));
    }
    case GateStep::kCheckToken:
      break;
  }
  if (deps_.runner->Busy()) return done(RunInProgress(Approval::kToken));
  if (auto refused = CheckApproval(*p, *token, kSkillRunTool)) return done(*refused);
  Dispatch(*p, request_id, done, std::string(*token), kSkillRunTool);
}

void SkillRunTool::CallRound(const Json& args, const Json& request_id, const RoundCall& round,
                             ToolDone answer, AskDone ask) {
  ToolDone done = [answer, args](ToolResult r) { answer(NameRun(std::move(r), args)); };
  Prepared p;
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

void SkillRunTool::Ask(const Prepared& p, const std::string* state, ToolDone done,
                       AskDone ask) {
  std::string request_state;
  if (state != nullptr) {
    request_state = *state;
  } else {
    // Why before issuing: a state that can never be spent would only ask the user to
    // approve a run that cannot happen.
    if (auto why = deps_.tokens->SharedRecordError()) return done(NoSharedRecord(*why));
    std::optional<IssuedToken> issued = deps_.tokens->Issue(
        p.will_run, Now(), deps_.gate.ttl_seconds, kSkillRunRoundTool);
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
  if (!round.request_state.is_string()) return done(Gate(RejectionPayload(TokenVerdict::kInvalid), true));
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
  prompt_ = OpenPrompt{request_id.dump(), Json(), live};
  Json id = deps_.elicit(
      ElicitationRequestParams(p->will_run), kElicitationTimeoutMs,
      [this, p, request_id, done, live](const Json* result, const Json* error) {
        // Why: an answer to a withdrawn prompt (the call was cancelled) runs nothing.
        if (!*live) return;
        *live = false;
        prompt_.reset();
        PromptAnswer answer = ReadPromptAnswer(error == nullptr ? result : nullptr);
        if (!answer.approved) return done(NotApproved(answer));
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
    if (!fresh) return Gate(RejectionPayload(TokenVerdict::kInvalid), true);
    return Gate(DraftChangedPayload(p.will_run, *fresh, deps_.gate.mode), true);
  }
  if (v != TokenVerdict::kValid) return Gate(RejectionPayload(v, detail), true);
  return std::nullopt;
}

void SkillRunTool::Dispatch(Prepared& p, const Json& request_id, ToolDone done,
                            std::optional<std::string> token, std::string_view domain) {
  // 7. argument checks, after the gate (docs/wire.md order).
  if (auto err = CheckArgContent(p.run.args)) return done(*err);
  ReceiptContext context = ReceiptContextOf(p.run);
  context.network_note = NetworkNote(deps_.is_set);
  // Why spend in the runner's commit step: only once everything that can refuse the run
  // (uid lease, scratch directory, worker) has succeeded is the approval used up; a run
  // that cannot start leaves it valid for the retry. The spend itself can still refuse
  // (another broker spent it first: TOKEN_REUSED), and then nothing runs.
  TokenVerdict spent = TokenVerdict::kValid;
  std::string detail;
  Runner::Commit commit = [&] {
    if (!token) return true;
    spent = deps_.tokens->CheckAndSpend(*token, p.will_run, Now(), &detail, domain);
    return spent == TokenVerdict::kValid;
  };
  running_ = request_id.dump();
  std::optional<StartRefusal> refused = deps_.runner->StartCommitted(
      std::move(p.run), std::move(commit),
      [this, done, context = std::move(context)](RunResult result) {
        running_.reset();
        if (result.failure)
          return done(Refusal("RUN_SETUP_FAILED", DescribeSetupFailure(*result.failure)));
        done(ToolResult{BuildReceipt(context, result)});
      });
  if (!refused) return;
  running_.reset();
  if (spent != TokenVerdict::kValid) return done(Gate(RejectionPayload(spent, detail), true));
  done(Refusal("RUN_NOT_STARTED", DescribeStartRefusal(*refused)));
}

void SkillRunTool::Cancel(const Json& request_id) {
  std::string key = request_id.dump();
  if (prompt_ && prompt_->call == key) {
    // Why withdraw at once: the user must not approve a call nobody waits for, and the
    // slot must free now, not when the prompt would have timed out.
    *prompt_->live = false;
    Json elicitation_id = std::move(prompt_->elicitation_id);
    prompt_.reset();
    if (deps_.withdraw) deps_.withdraw(elicitation_id);
  }
  if (running_ && *running_ == key) deps_.runner->Cancel();
}

}  // namespace skillmcp
