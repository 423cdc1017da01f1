// The confirmed skill_run result (WIRE.md "skill_run, confirmed"), built from what the
// supervisor observed. Pure: no process, no descriptor.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

inline constexpr size_t kStreamCaptureBytes = 1048576;  // per stream, WIRE.md

// One output stream: the first kStreamCaptureBytes bytes are kept, the rest counted and
// dropped (the reader keeps draining, so the script never blocks on a full pipe).
struct StreamCapture {
  std::string data;
  bool truncated = false;
  uint64_t total = 0;
  void Append(const char* bytes, size_t n);
};

// Valid UTF-8 from arbitrary bytes: each invalid sequence becomes U+FFFD. When `cut`
// is true the bytes were cut at a cap, and an incomplete character at the very end is
// dropped rather than replaced.
std::string SanitizeUtf8(std::string_view bytes, bool cut);

struct RunObservation {
  std::string skill;
  std::string script;
  std::string interpreter = "node";
  std::optional<int> exit_code;
  std::optional<int> signal;
  StreamCapture out;
  StreamCapture err;
  bool timed_out = false;
  int64_t timeout_ms = 0;
  int64_t duration_ms = 0;
  std::vector<std::string> env;  // sorted names
  std::optional<std::string> network_note;
};

// "SIGKILL" for 9; "SIG<n>" for a number without a name.
std::string SignalName(int sig);

// {skill, script, interpreter, exitCode|null, signal|null, stdout, stderr,
//  truncated: {stdout, stderr}, timedOut, timeoutMs, durationMs, env[], networkNote?}
nlohmann::ordered_json BuildReceipt(const RunObservation& run);

}  // namespace skillmcp
