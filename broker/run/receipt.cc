#include "broker/run/receipt.h"

#include <string.h>

#include <algorithm>

namespace skillmcp {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at `p` (1..4), or 0 when it is not one.
// Follows RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF.
size_t ValidSequence(const unsigned char* p, size_t left) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (left < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return len;
}

// Whether the tail [p, p+left) is a proper prefix of some valid sequence.
bool IncompletePrefix(const unsigned char* p, size_t left) {
  unsigned char c = p[0];
  size_t len = c >= 0xC2 && c <= 0xDF   ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
  if (len == 0 || left >= len) return false;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;
  if (left >= 2 && (p[1] < lo || p[1] > hi)) return false;
  for (size_t i = 2; i < left; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return false;
  return true;
}

}  // namespace

void StreamCapture::Append(const char* bytes, size_t n) {
  total += n;
  size_t room = kStreamCaptureBytes - std::min(data.size(), kStreamCaptureBytes);
  if (n > room) truncated = true;
  data.append(bytes, std::min(n, room));
}

std::string SanitizeUtf8(std::string_view bytes, bool cut) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  std::string out;
  out.reserve(n);
  size_t i = 0;
  while (i < n) {
    size_t len = ValidSequence(p + i, n - i);
    if (len > 0) {
      out.append(bytes.data() + i, len);
      i += len;
      continue;
    }
    // A character cut by the capture cap is not an encoding error of the script.
    if (cut && IncompletePrefix(p + i, n - i)) break;
    out += kReplacement;
    ++i;
  }
  return out;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

nlohmann::ordered_json BuildReceipt(const RunObservation& run) {
  nlohmann::ordered_json j;
  j["skill"] = run.skill;
  j["script"] = run.script;
  j["interpreter"] = run.interpreter;
  j["exitCode"] =
      run.exit_code ? nlohmann::ordered_json(*run.exit_code) : nlohmann::ordered_json(nullptr);
  j["signal"] = run.signal ? nlohmann::ordered_json(SignalName(*run.signal))
                           : nlohmann::ordered_json(nullptr);
  j["stdout"] = SanitizeUtf8(run.out.data, run.out.truncated);
  j["stderr"] = SanitizeUtf8(run.err.data, run.err.truncated);
  j["truncated"] = {{"stdout", run.out.truncated}, {"stderr", run.err.truncated}};
  j["timedOut"] = run.timed_out;
  j["timeoutMs"] = run.timeout_ms;
  j["durationMs"] = run.duration_ms;
  j["env"] = run.env;
  if (run.network_note) j["networkNote"] = *run.network_note;
  return j;
}

}  // namespace skillmcp
