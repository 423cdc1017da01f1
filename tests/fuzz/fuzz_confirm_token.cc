// libFuzzer entry point for the confirmToken decoder (broker/confirm/tokens.*), the string a
// client hands back in skill_run's `confirmToken`.
//   even first byte: the rest is a token; Check against a fixed willRun with the server's
//     own key must never throw, crash, or say kValid for anything but a token it signed.
//   odd first byte: the rest describes two willRuns (the last field is the script's
//     identity, which the token binds but the willRun does not show); a token issued for the
//     first must check as the rules say (valid, draft changed when the shown willRun or the
//     script identity differs, expired), spend once, and any other spelling of it (one byte
//     changed) must be refused.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/confirm/tokens.h"
#include "broker/confirm/will_run.h"

namespace {

using skillmcp::ConfirmTokens;
using skillmcp::TokenVerdict;
using skillmcp::WillRun;

constexpr int64_t kNow = 1'800'000'000;
// Seconds of clock one odd input may use: more than the longest ttl (16) and the latest
// check (now + 31).
constexpr int64_t kInputSeconds = 64;

WillRun FixedWillRun() {
  WillRun w;
  w.skill = "demo";
  w.interpreter = "node";
  w.argv = {"scripts/run.js", "a"};
  w.cwd = "/srv/skills/demo";
  w.timeout_ms = 5000;
  w.env_names = {"FUZZ_GREETING"};
  return w;
}

// Splits on NUL bytes: the willRun's strings, in field order.
std::vector<std::string> Fields(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && out.size() < 16) {
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

WillRun FromFields(const std::vector<std::string>& f, uint8_t shape) {
  WillRun w;
  size_t i = 0;
  auto next = [&]() -> std::string { return i < f.size() ? f[i++] : std::string(); };
  w.skill = next();
  w.interpreter = next();
  w.cwd = next();
  w.argv.push_back(next());
  for (int n = shape & 3; n > 0; --n) w.argv.push_back(next());
  for (int n = (shape >> 2) & 3; n > 0; --n) w.env_names.push_back(next());
  if (shape & 16) w.env_not_set.push_back(next());
  if (shape & 32) w.env_warning = next();
  w.timeout_ms = static_cast<int64_t>(shape) * 1000;
  // Not shown, but bound by the token (tokens.h): the identity of the approved script.
  w.script_identity = next();
  return w;
}

void CheckForeign(std::string_view token) {
  static std::unique_ptr<ConfirmTokens> tokens =
      ConfirmTokens::CreateFromSecret("fuzz confirmation secret");
  static const WillRun will_run = FixedWillRun();
  // Check only: it spends nothing, so one input never changes the next one's verdict.
  TokenVerdict v = tokens->Check(token, will_run, kNow);
  (void)skillmcp::TokenErrorCode(v);
}

void CheckIssued(std::string_view rest) {
  if (rest.size() < 3) return;
  const uint8_t shape = static_cast<uint8_t>(rest[0]);
  const uint8_t change = static_cast<uint8_t>(rest[1]);
  const uint8_t when = static_cast<uint8_t>(rest[2]);
  std::vector<std::string> fields = Fields(rest.substr(3));
  WillRun first = FromFields(fields, shape);
  WillRun second = first;
  switch (change % 8) {
    case 0:
      break;
    case 1:
      second.argv.push_back(fields.back());
      break;
    case 2:
      second.timeout_ms += 1;
      break;
    case 3:
      second.env_warning = fields.front();
      break;
    case 4:
      second.env_not_set.clear();
      break;
    case 5:
      second = FromFields(fields, change);
      break;
    case 6:
      second.script_identity = fields.back();
      break;
    case 7:
      // The script was edited after the preview: same willRun, another file.
      second.script_identity.push_back(static_cast<char>(when));
      break;
  }
  // One random key per process, as the server has: creating a key in guarded memory per
  // input cost more than everything checked here. Each input starts past the latest time
  // the previous one used (the clock never goes back, tokens.h), so the previous input's
  // tokens are expired and its spends pruned: no input sees another one's state.
  static std::unique_ptr<ConfirmTokens> tokens = ConfirmTokens::CreateRandom();
  static int64_t base = kNow;
  if (!tokens) abort();
  base += kInputSeconds;
  const int64_t now = base;
  const int64_t ttl = 1 + (when & 15);
  std::optional<skillmcp::IssuedToken> issued = tokens->Issue(first, now, ttl);
  std::optional<std::string> canon1 = skillmcp::CanonicalWillRun(first);
  std::optional<std::string> canon2 = skillmcp::CanonicalWillRun(second);
  // Why: a willRun that shows differently must bind different bytes.
  if (canon1 && canon2 && skillmcp::WillRunJson(first) != skillmcp::WillRunJson(second) &&
      *canon1 == *canon2) {
    __builtin_trap();
  }
  if (!issued) {
    if (canon1) __builtin_trap();  // only a non-UTF-8 willRun is refused
    return;
  }
  // The clock never goes back (tokens.h), so everything at `now` comes first.
  // Any other spelling of the token is refused, whatever the byte and position.
  std::string forged = issued->token;
  forged[fields.size() % forged.size()] ^= static_cast<char>(change | 1);
  if (tokens->Check(forged, first, now) != TokenVerdict::kInvalid) __builtin_trap();
  // A second token for the same run spends exactly once.
  std::optional<skillmcp::IssuedToken> spent = tokens->Issue(first, now, ttl);
  if (!spent || spent->token == issued->token) __builtin_trap();
  if (tokens->CheckAndSpend(spent->token, first, now) != TokenVerdict::kValid) {
    __builtin_trap();
  }
  if (tokens->CheckAndSpend(spent->token, first, now) != TokenVerdict::kReused) {
    __builtin_trap();
  }
  // The first one, later and against the second willRun, checks as the rules say.
  const int64_t at = now + ((when >> 4) & 31);
  TokenVerdict v = tokens->Check(issued->token, second, at);
  // Why the identity counts: a script edited after the user approved it must not run on
  // the approval (docs/wire.md §6); it is not part of the shown willRun.
  const bool same_run = canon2 && *canon1 == *canon2 &&
                        first.script_identity == second.script_identity;
  TokenVerdict want = at >= now + ttl ? TokenVerdict::kExpired
                      : !same_run     ? TokenVerdict::kDraftChanged
                                      : TokenVerdict::kValid;
  if (v != want) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    CheckForeign(rest);
  } else {
    CheckIssued(rest);
  }
  return 0;
}
