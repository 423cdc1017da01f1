// The codecs of what the worker writes on fd 4 (shared/worker_protocol.h): the step
// codes, a failed step's WorkerReport, the run's end (WorkerExit) and the two read
// together. Fixed-size frames, encoded without allocating (spawn's child and the
// namespace's init write them) and decoded strictly.
#include <signal.h>
#include <sys/wait.h>

#include "shared/worker_protocol.h"
#include "shared/worker_wire.h"

namespace skillmcp {
namespace {

using wire::PutU32At;
using wire::Reader;

constexpr char kReportMagic[4] = {'S', 'M', 'W', 'R'};
constexpr char kExitMagic[4] = {'S', 'M', 'W', 'X'};
constexpr int32_t kMaxSignal = 64;   // _NSIG - 1 on Linux

}  // namespace

std::optional<WorkerStep> WorkerStepFromCode(int code) {
  const bool known = code >= static_cast<int>(WorkerStep::kSpawn) &&
                     code <= static_cast<int>(WorkerStep::kMirrorSeccomp);
  if (!known) return std::nullopt;
  return static_cast<WorkerStep>(code);
}

bool EncodeWorkerReport(const WorkerReport& report, char (&out)[kWorkerReportBytes]) {
  const auto step = static_cast<int32_t>(report.step);
  if (!WorkerStepFromCode(step) || report.err < 0 || report.err > wire::kMaxErrno) return false;
  for (int i = 0; i < 4; ++i) out[i] = kReportMagic[i];
  PutU32At(out + 4, kWorkerProtocolVersion);
  PutU32At(out + 8, static_cast<uint32_t>(step));
  PutU32At(out + 12, static_cast<uint32_t>(report.err));
  return true;
}

std::optional<WorkerReport> DecodeWorkerReport(std::string_view bytes) {
  if (bytes.size() != kWorkerReportBytes) return std::nullopt;
  Reader r(bytes);
  uint32_t version = 0, step = 0, err = 0;
  if (!r.Magic(kReportMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.U32(step) || !r.U32(err) || !r.AtEnd()) return std::nullopt;
  const int32_t code = static_cast<int32_t>(step);
  const int32_t e = static_cast<int32_t>(err);
  std::optional<WorkerStep> known = WorkerStepFromCode(code);
  if (!known || e < 0 || e > wire::kMaxErrno) return std::nullopt;
  return WorkerReport{*known, e};
}

bool EncodeWorkerExit(int wait_status, char (&out)[kWorkerExitBytes]) {
  int32_t code = 0, value = 0;
  if (WIFEXITED(wait_status)) {
    code = CLD_EXITED;
    value = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    code = WCOREDUMP(wait_status) ? CLD_DUMPED : CLD_KILLED;
    value = WTERMSIG(wait_status);
    if (value < 1 || value > kMaxSignal) return false;
  } else {
    return false;  // stopped or continued: not an end
  }
  for (int i = 0; i < 4; ++i) out[i] = kExitMagic[i];
  PutU32At(out + 4, kWorkerProtocolVersion);
  PutU32At(out + 8, static_cast<uint32_t>(code));
  PutU32At(out + 12, static_cast<uint32_t>(value));
  return true;
}

std::optional<WorkerExit> DecodeWorkerExit(std::string_view bytes) {
  if (bytes.size() != kWorkerExitBytes) return std::nullopt;
  Reader r(bytes);
  uint32_t version = 0, code = 0, value = 0;
  if (!r.Magic(kExitMagic) || !r.U32(version) || version != kWorkerProtocolVersion)
    return std::nullopt;
  if (!r.U32(code) || !r.U32(value) || !r.AtEnd()) return std::nullopt;
  const bool exited = code == CLD_EXITED && value <= 255;
  const bool signalled = (code == CLD_KILLED || code == CLD_DUMPED) && value >= 1 &&
                         value <= static_cast<uint32_t>(kMaxSignal);
  if (!exited && !signalled) return std::nullopt;
  return WorkerExit{static_cast<int32_t>(code), static_cast<int32_t>(value)};
}

std::optional<WorkerFrames> DecodeWorkerFrames(std::string_view bytes) {
  WorkerFrames frames;
  if (bytes.empty()) return frames;
  // A report can only come first: the run's end is the last thing written on fd 4.
  if (bytes.size() == kWorkerReportBytes || bytes.size() == kWorkerFramesMaxBytes) {
    frames.report = DecodeWorkerReport(bytes.substr(0, kWorkerReportBytes));
    if (frames.report) bytes.remove_prefix(kWorkerReportBytes);
  }
  if (!bytes.empty()) {
    frames.exit = DecodeWorkerExit(bytes);
    if (!frames.exit) return std::nullopt;
  }
  return frames;
}

}  // namespace skillmcp
