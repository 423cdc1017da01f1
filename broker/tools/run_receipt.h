// The wire answer of a skill_run that got past the gate: the receipt of a run (docs/wire.md
// "skill_run, confirmed") and the sentences for a run that could not start or whose
// setup failed, all rendered from the plain values broker/run hands back.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/run/prepared_run.h"
#include "broker/run/run_result.h"

namespace skillmcp {

// What the receipt repeats from the request.
struct ReceiptContext {
  std::string skill;
  std::string script;
  std::string interpreter = "node";
  int64_t timeout_ms = 0;
  std::vector<std::string> env;  // sorted names
  std::optional<std::string> network_note;
};

// The context of a prepared run (network_note is the caller's), taken before the run is
// handed to the runner.
ReceiptContext ReceiptContextOf(const PreparedRun& run);

// "SIGKILL" for 9; "SIG<n>" for a number without a name.
std::string SignalName(int sig);

// "skill-mcp: the run used more than N MiB in all (M processes, U MiB when sampled) and
// was killed; ...": the line a run killed by the whole-run memory bound ends stderr with.
// U is rounded up, so it is always more than N.
std::string DescribeMemoryKill(const MemoryKill& kill);

// {skill, script, interpreter, exitCode|null, signal|null, stdout, stderr,
//  truncated: {stdout, stderr}, timedOut, timeoutMs, durationMs, env[], networkNote?}
nlohmann::ordered_json BuildReceipt(const ReceiptContext& context, const RunResult& run);

// "the script did not start: the worker could not ...: <errno text>; <hint>".
std::string DescribeSetupFailure(const SetupFailure& failure);

// Why the runner refused to start the run, for RUN_NOT_STARTED.
std::string DescribeStartRefusal(const StartRefusal& refusal);

}  // namespace skillmcp
