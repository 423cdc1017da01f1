#include "broker/tools/skill_run.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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

struct SkillRunTool::AuditCall {
  AuditFacts facts;
  // What the answer is: kDefault records an error answer as refused and writes nothing for
  // any other (a preview and its token are a step, not an outcome); kExplicit writes
  // `facts.outcome`.
  enum class Mark { kDefault, kExplicit } mark = Mark::kDefault;
  bool written = false;  // the one record of this call is out
  std::optional<std::chrono::steady_clock::time_point> prompt_sent;  // elicitation/create
  bool cancel_asked = false;  // notifications/cancelled came for its run
  void Set(AuditOutcome outcome) {
    mark = Mark::kExplicit;
    facts.outcome = outcome;
  }
};

namespace {

// The answer's code and sentence, for a record of a refusal: the code from `error`, else
// the gate's `reason` or `status`; the sentence from `message`, else `note`.
void ReadRefusal(const ToolResult& r, AuditFacts* f) {
  auto text = [&r](const char* key) {
    auto it = r.payload.find(key);
    return it != r.payload.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  f->refusal = text("error");
  if (f->refusal.empty()) f->refusal = text("reason");
  if (f->refusal.empty()) f->refusal = text("status");
  f->reason = text("message");
  if (f->reason.empty()) f->reason = text("note");
}

std::string Sha256Hex(const ScriptIdentity& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : id.sha256) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

ToolResult Gate(OrderedJson payload, bool is_error) {
  ToolResult r;
  r.payload = std::move(payload);
  r.is_error = is_error;
  r.indented = true;     // confirmation payloads are 2-space indented (docs/wire.md)
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
WillRun WillRunOf(const PreparedRun& run, const ScriptEnv& env,
                  std::optional<std::string> interpreter_path) {
  WillRun w;
  w.skill = run.skill;
  w.interpreter = run.interpreter;
  w.interpreter_path = std::move(interpreter_path);
  w.argv.push_back(run.script);
  w.argv.insert(w.argv.end(), run.args.begin(), run.args.end());
  w.cwd = run.skill_dir_path;
  w.timeout_ms = run.timeout_ms;
  w.env_names = run.env_names;
  w.env_not_set = env.not_set;
  w.env_warning = env.warning;
  w.script_identity = run.identity.Binding();
  w.egress = run.egress;
  return w;
}

// What the receipt says of a declared run's network, in the audit record's words.
void RecordEgress(const EgressSummary& summary, AuditFacts* f) {
  f->egress_reached.emplace();
  for (const EgressSummary::Host& h : summary.hosts)
    f->egress_reached->push_back(h.host + ":" + std::to_string(h.port));
  f->egress_refused.emplace();
  for (const EgressSummary::Refusal& r : summary.refused)
    f->egress_refused->push_back(r.kind + " " + r.target + ":" + std::to_string(r.port));
}

}  // namespace

SkillRunTool::SkillRunTool(SkillRunDeps deps) : deps_(std::move(deps)) {}

SkillRunTool::~SkillRunTool() {
  // why: the broker is going (the client left); a prompt nobody can answer and a run that is
  // killed now are outcomes too, and each call leaves its one record.
  for (AuditCall* call : {prompt_ ? prompt_->audit.get() : nullptr, running_audit_.get()}) {
    if (call == nullptr || call->written) continue;
    call->Set(AuditOutcome::kCancelled);
    call->facts.reason = "the client left before the call was answered";
    Record(*call, nullptr);
  }
}

std::shared_ptr<SkillRunTool::AuditCall> SkillRunTool::StartAudit(const Json& args) const {
  auto call = std::make_shared<AuditCall>();
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
                               std::shared_ptr<AuditCall> audit) {
  return [this, answer, args, audit](ToolResult r) {
    r = NameRun(std::move(r), args);
    Record(*audit, &r);
    answer(std::move(r));
  };
}

void SkillRunTool::Record(AuditCall& call, const ToolResult* result) {
  if (call.written) return;
  if (call.mark == AuditCall::Mark::kDefault) {
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
    case ScriptRefusal::kNone:
      break;
    case ScriptRefusal::kUnknownSkill:
      return UnknownSkill(deps_.view, name);
    case ScriptRefusal::kUndeclared:
      return Refusal("SCRIPT_NOT_DECLARED", lookup.message);
    case ScriptRefusal::kUngranted:
      return Refusal("SCRIPT_NOT_GRANTED", lookup.message);
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
  run.skill_dir.reset(fcntl(skill->dir.get(), F_DUPFD_CLOEXEC, 0));
  if (!run.skill_dir.valid())
    return Refusal("PATH_REFUSED", "skill \"" + name + "\": " + std::strerror(errno));
  run.skill_dir_fd = run.skill_dir.get();
  run.skill_dir_path = skill->source;
  run.script = granted.script;
  run.script_fd = std::move(sealed->fd);
  run.identity = sealed->identity;
  run.script_real_path = std::move(*real);
  run.timeout_ms = granted.timeout_ms;
  // why from the declaration as it is now: a declaration changed after the preview gives
  // another willRun, so its token is DRAFT_CHANGED.
  run.egress = RunEgressRules(deps_.egress, skill->declared_egress);
  // 6. an allowlist no run can be held to, before the gate shows it (docs/wire.md order).
  if (run.egress)
    if (std::string why = EgressRulesRefusal(*run.egress); !why.empty())
      return Refusal("RUNS_BLOCKED", why);

  ScriptEnv env = ComputeScriptEnv(granted.env, deps_.is_set, deps_.view.grants->from);
  run.env_names = env.names;
  const auto pinned = deps_.interpreter_paths.find(run.interpreter);
  const std::string interpreter_path =
      pinned == deps_.interpreter_paths.end() ? std::string() : pinned->second;
  out->will_run = WillRunOf(
      run, env, deps_.show_interpreter_path ? std::optional(interpreter_path) : std::nullopt);
  if (out->audit) {
    AuditFacts& f = out->audit->facts;
    f.prepared = true;
    f.skill = run.skill;
    f.script = run.script;
    f.script_sha256 = Sha256Hex(run.identity);
    f.interpreter = run.interpreter;
    f.interpreter_path = interpreter_path;
    f.argv = out->will_run.argv;
    f.env_names = run.env_names;
    f.timeout_ms = run.timeout_ms;
    if (run.egress) {
      f.egress_allowed.emplace();
      for (const EgressRule& rule : *run.egress) {
        std::string entry = rule.host + ":";
        for (size_t i = 0; i < rule.ports.size(); ++i)
          entry += (i ? "," : "") + std::to_string(rule.ports[i]);
        f.egress_allowed->push_back(std::move(entry));
      }
    }
  }
  return std::nullopt;
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

void SkillRunTool::PassGate(Prepared& prepared, GateStep step, const Json& request_id,
                            ToolDone done) {
  Prepared* p = &prepared;
  const std::optional<std::string>& token = p->token;
  switch (step) {
    case GateStep::kRefuse:
      p->audit->Set(AuditOutcome::kRefused);
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
    return done(Gate(RejectionPayload(TokenVerdict::kInvalid), true));
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
    if (!fresh) return Gate(RejectionPayload(TokenVerdict::kInvalid), true);
    return Gate(DraftChangedPayload(p.will_run, *fresh, deps_.gate.mode), true);
  }
  if (v != TokenVerdict::kValid) return Gate(RejectionPayload(v, detail), true);
  return std::nullopt;
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
  std::shared_ptr<AuditCall> audit = p.audit;
  running_audit_ = audit;
  std::optional<StartRefusal> refused = deps_.runner->StartCommitted(
      std::move(p.run), std::move(commit),
      [this, done, audit, context = std::move(context)](RunResult result) {
        running_.reset();
        running_audit_.reset();
        AuditFacts& f = audit->facts;
        f.run_uid = result.run_uid;
        if (result.failure) {
          audit->Set(AuditOutcome::kSetupFailed);
          return done(Refusal("RUN_SETUP_FAILED", DescribeSetupFailure(*result.failure)));
        }
        audit->Set(result.memory_kill    ? AuditOutcome::kMemoryKilled
                   : result.timed_out    ? AuditOutcome::kTimedOut
                   : audit->cancel_asked ? AuditOutcome::kCancelled
                                         : AuditOutcome::kRan);
        f.exit_code = result.exit_code;
        if (result.signal) f.signal = SignalName(*result.signal);
        f.duration_ms = result.duration_ms;
        f.peak_memory_bytes = result.peak_memory_bytes;
        f.stdout_bytes = result.out.total;
        f.stderr_bytes = result.err.total;
        if (result.egress) RecordEgress(*result.egress, &f);
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
    // why: the call ends here with no answer to the client, so its record is written here.
    std::shared_ptr<AuditCall> audit = std::move(prompt_->audit);
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
