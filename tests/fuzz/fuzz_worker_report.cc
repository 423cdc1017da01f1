// libFuzzer entry point for what a worker writes on fd 4 (a trust boundary: the broker
// decodes whatever a worker, or whatever took its place, wrote there). Whatever the
// bytes, DecodeWorkerReport, DecodeWorkerExit and DecodeWorkerFrames must return; what
// they accept must be canonical: encoding it again gives back exactly the input, a report
// names a known step with a plausible errno, and the run's end is an exit code or a signal.
#include <sys/wait.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "shared/worker_protocol.h"

namespace {

using skillmcp::kWorkerExitBytes;
using skillmcp::kWorkerReportBytes;

std::string Report(const skillmcp::WorkerReport& report) {
  char out[kWorkerReportBytes];
  if (!skillmcp::EncodeWorkerReport(report, out)) std::abort();
  return std::string(out, sizeof out);
}

// The wait status the end stands for, encoded again.
std::string End(const skillmcp::WorkerExit& end) {
  int status = 0;
  if (end.code == CLD_EXITED) {
    status = (end.value & 0xff) << 8;
  } else {
    status = end.value | (end.code == CLD_DUMPED ? 0x80 : 0);
  }
  char out[kWorkerExitBytes];
  if (!skillmcp::EncodeWorkerExit(status, out)) std::abort();
  return std::string(out, sizeof out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const auto report = skillmcp::DecodeWorkerReport(bytes)) {
    if (size != kWorkerReportBytes) std::abort();
    if (!skillmcp::WorkerStepFromCode(static_cast<int>(report->step))) std::abort();
    if (Report(*report) != bytes) std::abort();
  }
  if (const auto end = skillmcp::DecodeWorkerExit(bytes)) {
    if (size != kWorkerExitBytes) std::abort();
    if (End(*end) != bytes) std::abort();
  }
  if (const auto frames = skillmcp::DecodeWorkerFrames(bytes)) {
    std::string again;
    if (frames->report) again += Report(*frames->report);
    if (frames->exit) again += End(*frames->exit);
    if (again != bytes) std::abort();
  }
  return 0;
}
