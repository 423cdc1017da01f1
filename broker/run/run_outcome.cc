#include "broker/run/run_outcome.h"

#include <signal.h>

#include <cerrno>
#include <optional>

#include "shared/worker_protocol.h"

namespace skillmcp {

RunResult DecodeRunOutcome(const std::string& report, int child_code, int child_status,
                           uint32_t uid, const LaunchConfig& config, std::string_view interpreter) {
  RunResult result;
  const PinnedInterpreter* pinned = config.Interpreter(interpreter);
  const std::string interpreter_path = pinned ? pinned->path : "";
  // The report first, the exit code second: a script could itself exit with a step code.
  const std::optional<WorkerFrames> frames = DecodeWorkerFrames(report);
  if (frames && frames->report) {
    const WorkerReport& r = *frames->report;
    result.failure = SetupFailure{
        static_cast<int32_t>(r.step), r.err,           uid, config.gid, config.worker_path,
        std::string(interpreter),     interpreter_path};
    return result;
  }
  if (!frames) {
    // why: the worker wrote something that is neither a report nor the run's end (node
    // never holds fd 4), so the run counts as failed setup, never as ran.
    result.failure =
        SetupFailure{kUnreadableReport,        EPROTO,          uid, config.gid, config.worker_path,
                     std::string(interpreter), interpreter_path};
    return result;
  }
  if (child_code == CLD_EXITED) {
    result.exit_code = child_status;
  } else if (child_code == CLD_KILLED || child_code == CLD_DUMPED) {
    result.signal = child_status;
  }
  return result;
}

}  // namespace skillmcp
