// libFuzzer entry point for the worker report (a trust boundary: the broker decodes
// whatever a worker, or whatever took its place, wrote on fd 4). Whatever the bytes,
// DecodeWorkerReport must return; what it accepts must be a known step with a plausible
// errno, and canonical: encoding it again gives back exactly the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "shared/worker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto report = skillmcp::DecodeWorkerReport(bytes);
  if (!report) return 0;
  if (size != skillmcp::kWorkerReportBytes) std::abort();
  if (!skillmcp::WorkerStepFromCode(static_cast<int>(report->step))) std::abort();
  char again[skillmcp::kWorkerReportBytes];
  if (!skillmcp::EncodeWorkerReport(*report, again)) std::abort();
  if (std::string_view(again, sizeof again) != bytes) std::abort();
  return 0;
}
