// skill_run: the refusals that do not depend on the user (in docs/wire.md order), then
// the confirmation gate (token or elicitation), then one run: Prepare decides exactly
// what will run (a PreparedRun holding the checked script descriptor;
// skill_run_prepare.cc), the gate confirms it (skill_run_confirm.cc), the Runner runs
// it, and the answer is rendered here (broker/tools/run_receipt.h). Each call that ends
// leaves one audit record (broker/tools/run_audit_call.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "broker/audit/audit_peer.h"
#include "broker/audit/audit_record.h"
#include "broker/confirm/gate_config.h"
#include "broker/confirm/tokens.h"
#include "broker/confirm/will_run.h"
#include "broker/grants/env_lookup.h"
#include "broker/run/network_mode.h"
#include "broker/run/runner.h"
#include "broker/tools/run_audit_call.h"
#include "broker/tools/tool.h"

namespace skillmcp {

inline constexpr size_t kMaxRunArgs = 64;
inline constexpr size_t kMaxRunArgBytes = 8192;
// How long a confirmation prompt may stay unanswered before the call ends with nothing
// run (docs/wire.md §6).
inline constexpr int64_t kElicitationTimeoutMs = 300000;
// The key of the confirmation prompt in a 2026-07-28 input_required round (docs/wire.md §8).
inline constexpr std::string_view kConfirmInputKey = "confirm";

// What skill_run's audit records need beyond the call (docs/audit.md).
struct SkillRunAudit {
  const AuditConnection* connection = nullptr;  // the peer and the client; may be null
  std::vector<std::string> layers;              // the isolation layers on
  std::function<void(AuditFacts)> emit;         // AuditSink::Emit; empty: no trail
};

struct SkillRunDeps {
  CatalogueView view;
  IsSetFn is_set;  // EnvStore::IsSet
  GateConfig gate;
  ConfirmTokens* tokens = nullptr;  // nullptr: tokens unavailable, the gate refuses
  Runner* runner = nullptr;         // RunSupervisor in the server; a fake in tests
  // Sends elicitation/create to the client and returns its id; the handler gets its
  // answer, or an error (also on timeout). Session::SendRequest in the server.
  std::function<Json(OrderedJson params, int64_t timeout_ms,
                     std::function<void(const Json* result, const Json* error)> handler)>
      elicit;
  // Withdraws an elicitation/create still unanswered (notifications/cancelled to the
  // client; its answer, if one still comes, is ignored). Session::WithdrawRequest.
  std::function<void(const Json& elicitation_id)> withdraw;
  // Set when no script may run at all on this host (hosted and the environ block could
  // not be wiped; no worker or node): the sentence skill_run refuses with.
  std::optional<std::string> runs_blocked;
  // Each interpreter of this deployment's set by name, with its pinned path (""
  // where it could not be pinned): the audit records it; with show_interpreter_path the
  // willRun shows it and the token binds it (SKILL_MCP_INTERPRETERS set).
  std::map<std::string, std::string, std::less<>> interpreter_paths;
  bool show_interpreter_path = false;
  // The declared network mode and the operator's patterns: each run's allowlist, shown
  // in willRun and bound by the token (broker/run/network_mode.h).
  EgressPolicy egress;
  std::function<int64_t()> now = nullptr;  // unix seconds; defaults to the real clock
  SkillRunAudit audit;
};

class SkillRunTool : public RunToolHandler {
 public:
  explicit SkillRunTool(SkillRunDeps deps);
  // A prompt still open or a run still in flight (the client left) is recorded cancelled.
  ~SkillRunTool() override;
  void Call(const Json& args, const Json& request_id, bool client_elicits, ToolDone done) override;
  // 2026-07-28 (docs/wire.md §8): the prompt is an input_required round whose requestState
  // is a single-use token in its own domain (kSkillRunRoundTool), bound to the willRun.
  void CallRound(const Json& args, const Json& request_id, const RoundCall& round, ToolDone done,
                 AskDone ask) override;
  void Cancel(const Json& request_id) override;

 private:
  struct Prepared {
    PreparedRun run;                      // what exactly runs, moved down once
    std::optional<std::string> token;     // confirmToken, when given
    WillRun will_run;                     // what the user approves (and the token binds)
    std::shared_ptr<RunAuditCall> audit;  // never null
  };
  // The call's record, holding what is known before any check: the peer and the client,
  // the names asked for, the gate's mode and the layers.
  std::shared_ptr<RunAuditCall> StartAudit(const Json& args) const;
  // The answer `answer` gets, named (NameRun) and recorded once (Record).
  ToolDone Audited(ToolDone answer, const Json& args, std::shared_ptr<RunAuditCall> audit);
  // Writes the call's record, from `result` where it is the answer; once per call.
  void Record(RunAuditCall& call, const ToolResult* result);
  // Everything before the gate; returns a refusal or fills `out` (skill_run_prepare.cc).
  std::optional<ToolResult> Prepare(const Json& args, Prepared* out);
  // The gate (skill_run_confirm.cc), from here to CheckApproval. The prompt as an
  // elicitation/create; one open at a time.
  void Elicit(std::shared_ptr<Prepared> p, const Json& request_id, ToolDone done);
  // The gate when no prompt is shown: refuse, issue a preview token, or check one.
  void PassGate(Prepared& p, GateStep step, const Json& request_id, ToolDone done);
  // Round one: the prompt and a fresh round state; the same state again (`state`) when
  // a retry carried no answer.
  void Ask(const Prepared& p, const std::string* state, ToolDone done, AskDone ask);
  // A retry carrying a round state: checked; an approval is spent when its run starts.
  void Answer(Prepared& p, const Json& request_id, const RoundCall& round, ToolDone done,
              AskDone ask);
  // Checks a confirmToken or round state (in `domain`) against the willRun, spending
  // nothing: nullopt when valid, else the gate's answer (a fresh preview for a changed
  // draft, or the rejection).
  std::optional<ToolResult> CheckApproval(const Prepared& p, const std::string& token,
                                          std::string_view domain);
  // Starts the run; `token` (in `domain`), when given, is spent only once the run side is
  // ready to start it (Runner::StartCommitted), and nothing runs if that spend fails.
  void Dispatch(Prepared& p, const Json& request_id, ToolDone done,
                std::optional<std::string> token, std::string_view domain);
  int64_t Now() const;

  SkillRunDeps deps_;
  // The one open confirmation prompt: the tools/call it is for, the elicitation/create
  // sent, and a flag its answer handler checks (false once answered or withdrawn).
  struct OpenPrompt {
    std::string call;
    Json elicitation_id;
    std::shared_ptr<bool> live;
    std::shared_ptr<RunAuditCall> audit;
  };
  std::optional<OpenPrompt> prompt_;
  // The request whose run is in flight (for cancellation), and its record.
  std::optional<std::string> running_;
  std::shared_ptr<RunAuditCall> running_audit_;
};

}  // namespace skillmcp
