// One skill_run call's audit record (docs/audit.md), filled as the call goes: what was
// asked, what was prepared, how it was confirmed, how the run ended or why it was refused.
// SkillRunTool writes it once, when the call ends (SkillRunTool::Record); the facts here
// are read off plain values, so the record says what the answer and the receipt say.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "broker/audit/audit_record.h"
#include "broker/confirm/will_run.h"
#include "broker/run/prepared_run.h"
#include "broker/run/run_result.h"
#include "broker/tools/tool.h"

namespace skillmcp {

struct RunAuditCall {
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

// The answer's code and sentence, for a record of a refusal: the code from `error`, else
// the gate's `reason` or `status`; the sentence from `message`, else `note`.
void ReadRefusal(const ToolResult& r, AuditFacts* f);

// What was prepared to run, as the user is shown it (`will_run`): the skill, the script
// and its sha256, the interpreter and its pinned path ("" where none), argv, the names of
// the variables, the timeout, and in the declared network mode the allowlist.
void RecordPrepared(const PreparedRun& run, const WillRun& will_run,
                    const std::string& interpreter_path, AuditFacts* f);

// How a run that started ended: the outcome (memory-killed, timed out, cancelled where
// the client asked, else ran; setup-failed for a worker's failed step) and what the
// receipt says of it.
void RecordRunResult(const RunResult& result, RunAuditCall* call);

}  // namespace skillmcp
