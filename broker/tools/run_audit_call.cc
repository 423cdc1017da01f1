#include "broker/tools/run_audit_call.h"

#include "broker/tools/run_receipt.h"

namespace skillmcp {
namespace {

std::string Sha256Hex(const ScriptIdentity& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : id.sha256) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

// What the receipt says of a declared run's network, in the audit record's words.
void RecordEgress(const EgressSummary& summary, AuditFacts* f) {
  f->egress_reached.emplace();
  for (const EgressSummary::Host& h : summary.hosts)
    f->egress_reached->push_back(h.host + ":" + std::to_string(h.port));
  f->egress_refused.emplace();
  for (const EgressSummary::Refusal& r : summary.refused)
    f->egress_refused->push_back(r.kind + " " + r.target + ":" + std::to_string(r.port));
  f->egress_hosts_omitted = summary.hosts_omitted.hosts;
  f->egress_refused_omitted = summary.refused_omitted;
}

}  // namespace

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

void RecordPrepared(const PreparedRun& run, const WillRun& will_run,
                    const std::string& interpreter_path, AuditFacts* f) {
  f->prepared = true;
  f->skill = run.skill;
  f->script = run.script;
  f->script_sha256 = Sha256Hex(run.identity);
  f->interpreter = run.interpreter;
  f->interpreter_path = interpreter_path;
  f->argv = will_run.argv;
  f->env_names = run.env_names;
  f->timeout_ms = run.timeout_ms;
  if (run.egress) {
    f->egress_allowed.emplace();
    for (const EgressRule& rule : *run.egress) {
      std::string entry = rule.host + ":";
      for (size_t i = 0; i < rule.ports.size(); ++i)
        entry += (i ? "," : "") + std::to_string(rule.ports[i]);
      f->egress_allowed->push_back(std::move(entry));
    }
  }
}

void RecordRunResult(const RunResult& result, RunAuditCall* call) {
  AuditFacts& f = call->facts;
  f.run_uid = result.run_uid;
  if (result.failure) {
    call->Set(AuditOutcome::kSetupFailed);
    return;
  }
  call->Set(result.memory_kill   ? AuditOutcome::kMemoryKilled
            : result.timed_out   ? AuditOutcome::kTimedOut
            : call->cancel_asked ? AuditOutcome::kCancelled
                                 : AuditOutcome::kRan);
  f.exit_code = result.exit_code;
  if (result.signal) f.signal = SignalName(*result.signal);
  f.duration_ms = result.duration_ms;
  f.peak_memory_bytes = result.peak_memory_bytes;
  f.stdout_bytes = result.out.total;
  f.stderr_bytes = result.err.total;
  if (result.egress) RecordEgress(*result.egress, &f);
}

}  // namespace skillmcp
