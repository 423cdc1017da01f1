#include "broker/tools/run_receipt.h"

#include <string.h>

#include <cstring>

#include "shared/utf8.h"
#include "shared/worker_protocol.h"

namespace skillmcp {

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

std::string DescribeMemoryKill(const MemoryKill& kill) {
  if (kill.sample_cap != 0)
    return "skill-mcp: the run had more processes than the broker can sample (" +
           std::to_string(kill.sample_cap) +
           " /proc reads in one sample) and was killed, since what it did not read may hold any "
           "amount of memory; SKILL_MCP_LIMIT_NPROC bounds a run's processes";
  return "skill-mcp: the run used more than " + std::to_string(kill.limit_bytes >> 20) +
         " MiB in all (" + std::to_string(kill.processes) +
         (kill.processes == 1 ? " process" : " processes") + ", " +
         // Rounded up: a sample over the limit never reads as the limit itself.
         std::to_string((kill.used_bytes + (1ull << 20) - 1) >> 20) +
         " MiB when sampled) and was killed; SKILL_MCP_LIMIT_RUN_MEMORY_MB sets the limit";
}

ReceiptContext ReceiptContextOf(const PreparedRun& run) {
  return ReceiptContext{.skill = run.skill,
                        .script = run.script,
                        .interpreter = run.interpreter,
                        .timeout_ms = run.timeout_ms,
                        .env = run.env_names};
}

namespace {

// {hosts: [{host, port, connections, bytesOut, bytesIn}], hostsOmitted?: {hosts,
// connections, bytesOut, bytesIn}, refused: [{kind, target, port, reason}],
// refusedOmitted?}: what the declared network mode let the run reach, and what it refused,
// each list bounded and what it leaves out counted (broker/run/egress_summary.h).
nlohmann::ordered_json EgressJson(const EgressSummary& summary) {
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const EgressSummary::Host& h : summary.hosts) {
    nlohmann::ordered_json e;
    e["host"] = h.host;
    e["port"] = h.port;
    e["connections"] = h.connections;
    e["bytesOut"] = h.bytes_out;
    e["bytesIn"] = h.bytes_in;
    hosts.push_back(std::move(e));
  }
  nlohmann::ordered_json refused = nlohmann::ordered_json::array();
  for (const EgressSummary::Refusal& r : summary.refused) {
    nlohmann::ordered_json e;
    e["kind"] = r.kind;
    e["target"] = r.target;
    e["port"] = r.port;
    if (!r.reason.empty()) e["reason"] = r.reason;
    refused.push_back(std::move(e));
  }
  nlohmann::ordered_json j;
  j["hosts"] = std::move(hosts);
  if (const EgressSummary::Omitted& o = summary.hosts_omitted; o.hosts > 0) {
    nlohmann::ordered_json e;
    e["hosts"] = o.hosts;
    e["connections"] = o.connections;
    e["bytesOut"] = o.bytes_out;
    e["bytesIn"] = o.bytes_in;
    j["hostsOmitted"] = std::move(e);
  }
  j["refused"] = std::move(refused);
  if (summary.refused_omitted > 0) j["refusedOmitted"] = summary.refused_omitted;
  return j;
}

}  // namespace

nlohmann::ordered_json BuildReceipt(const ReceiptContext& context, const RunResult& run) {
  nlohmann::ordered_json j;
  j["skill"] = context.skill;
  j["script"] = context.script;
  j["interpreter"] = context.interpreter;
  j["exitCode"] =
      run.exit_code ? nlohmann::ordered_json(*run.exit_code) : nlohmann::ordered_json(nullptr);
  j["signal"] = run.signal ? nlohmann::ordered_json(SignalName(*run.signal))
                           : nlohmann::ordered_json(nullptr);
  j["stdout"] = RepairUtf8(run.out.data, run.out.truncated);
  std::string err = RepairUtf8(run.err.data, run.err.truncated);
  // why: the 2025 receipt has no field for it (docs/wire.md); like a timeout's kill it
  // shows as signal SIGKILL, and the reason is the last line of stderr.
  if (run.memory_kill) {
    if (!err.empty() && err.back() != '\n') err += '\n';
    err += DescribeMemoryKill(*run.memory_kill) + "\n";
  }
  j["stderr"] = std::move(err);
  j["truncated"] = {{"stdout", run.out.truncated}, {"stderr", run.err.truncated}};
  j["timedOut"] = run.timed_out;
  j["timeoutMs"] = context.timeout_ms;
  j["durationMs"] = run.duration_ms;
  j["env"] = context.env;
  if (context.network_note) j["networkNote"] = *context.network_note;
  if (run.egress) j["egress"] = EgressJson(*run.egress);
  return j;
}

std::string DescribeSetupFailure(const SetupFailure& f) {
  std::string err = std::strerror(f.err);
  if (f.step == kUnreadableReport)
    return "the script did not start: the worker " + f.worker_path +
           " answered with something that is not a setup report (a worker from another "
           "build?); reinstall skill-mcp so the broker and the worker match";
  std::optional<WorkerStep> step = WorkerStepFromCode(f.step);
  if (!step)
    return "the script did not start: the worker failed at an unknown setup step " +
           std::to_string(f.step) + ": " + err;
  if (*step == WorkerStep::kSpawn)
    return "the script did not start: the broker could not start the worker " + f.worker_path +
           ": " + err;
  std::string what = DescribeWorkerStep(*step);
  std::string hint;
  switch (*step) {
    case WorkerStep::kRefuseRootIds:
    case WorkerStep::kSetGroups:
    case WorkerStep::kSetGid:
    case WorkerStep::kSetUid:
    case WorkerStep::kVerifyIds:
      what += " (run-as uid " + std::to_string(f.uid) + ", gid " + std::to_string(f.gid) + ")";
      hint = "; the broker needs root or CAP_SETUID/CAP_SETGID for this (see skill-mcp doctor)";
      break;
    case WorkerStep::kChdir:
      hint = "; the run-as user needs search permission on the skill directory and its parents";
      break;
    case WorkerStep::kExec:
      hint = "; check the pinned " + f.interpreter + " (" + f.interpreter_path + ")";
      break;
    default:
      break;
  }
  return "the script did not start: the worker could not " + what + ": " + err + hint;
}

std::string DescribeStartRefusal(const StartRefusal& r) {
  switch (r.problem) {
    case StartProblem::kBusy:
      return "a script is already running; wait for its result, then call skill_run again";
    case StartProblem::kUnavailable:
      return "scripts cannot run on this server: " + r.detail;
    case StartProblem::kBadDescription:
      return "the run description is not acceptable (an argument or variable holds a NUL byte, "
             "or everything together is over 1 MiB); shorten the arguments";
    case StartProblem::kSystem:
      break;
  }
  return r.detail + ": " + std::strerror(r.err);
}

}  // namespace skillmcp
