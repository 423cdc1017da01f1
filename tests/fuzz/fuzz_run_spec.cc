// libFuzzer entry point for the worker's parameters (a trust boundary: the worker
// decodes whatever arrives on fd 3). Whatever the bytes, DecodeRunSpec and DecodeCellSpec
// (the cell a worker started ahead is told first) must return (never crash, hang or
// allocate past the input), and what they accept must be valid and canonical: encoding
// it again gives back exactly the input (the cell: its payload, after the length prefix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "shared/worker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const auto cell = skillmcp::DecodeCellSpec(bytes)) {
    if (!skillmcp::IsValidCellSpec(*cell)) std::abort();
    const auto frame = skillmcp::EncodeCellSpec(*cell);
    if (!frame || frame->substr(skillmcp::kCellSpecPrefixBytes) != bytes) std::abort();
    if (size > skillmcp::kCellSpecMaxBytes) std::abort();
  }
  const auto spec = skillmcp::DecodeRunSpec(bytes);
  if (!spec) return 0;
  if (!skillmcp::IsValidRunSpec(*spec)) std::abort();
  const auto again = skillmcp::EncodeRunSpec(*spec);
  if (!again || *again != bytes) std::abort();
  if (size > skillmcp::kRunSpecMaxBytes) std::abort();
  return 0;
}
