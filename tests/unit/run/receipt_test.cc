#include "broker/run/receipt.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace skillmcp {
namespace {

TEST(SanitizeUtf8, KeepsValidTextAndReplacesInvalidBytes) {
  EXPECT_EQ(SanitizeUtf8("plain €  𝄞", false), "plain €  𝄞");
  EXPECT_EQ(SanitizeUtf8("f\xff\xfe\xc3(", false), "f\uFFFD\uFFFD\uFFFD(");
  EXPECT_EQ(SanitizeUtf8("\xc0\xaf", false), "\uFFFD\uFFFD");            // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xed\xa0\x80", false), "\uFFFD\uFFFD\uFFFD");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xf4\x90\x80\x80", false).find('\xf4'), std::string::npos);  // > U+10FFFF
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b", 3), false), std::string("a\0b", 3));
}

TEST(SanitizeUtf8, ACharacterCutAtTheCapIsDroppedNotReplaced) {
  EXPECT_EQ(SanitizeUtf8("ab\xe2\x82", true), "ab");
  EXPECT_EQ(SanitizeUtf8("ab\xf0\x9d\x84", true), "ab");
  // Not cut: the same bytes are an encoding error and show as U+FFFD.
  EXPECT_EQ(SanitizeUtf8("ab\xe2\x82", false), "ab\uFFFD\uFFFD");
  // Cut, but the tail is not a prefix of any character: still replaced.
  EXPECT_EQ(SanitizeUtf8("ab\xff", true), "ab\uFFFD");
}

TEST(StreamCapture, KeepsTheFirstMebibyteAndFlagsTheRest) {
  StreamCapture c;
  std::string chunk(kStreamCaptureBytes - 1, 'a');
  c.Append(chunk.data(), chunk.size());
  EXPECT_FALSE(c.truncated);
  c.Append("\xe2\x82\xac", 3);  // '€' straddles the cap
  EXPECT_TRUE(c.truncated);
  EXPECT_EQ(c.data.size(), kStreamCaptureBytes);
  EXPECT_EQ(c.total, kStreamCaptureBytes + 2);
  std::string clean = SanitizeUtf8(c.data, c.truncated);
  EXPECT_EQ(clean, chunk);
}

TEST(BuildReceipt, KeyOrderAndNulls) {
  RunObservation o;
  o.skill = "weather";
  o.script = "scripts/forecast.js";
  o.signal = SIGKILL;
  o.out.Append("\xff", 1);
  o.timed_out = true;
  o.timeout_ms = 1000;
  o.duration_ms = 3001;
  o.env = {"HOME", "PATH"};
  nlohmann::ordered_json j = BuildReceipt(o);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"skill", "script", "interpreter", "exitCode", "signal",
                                            "stdout", "stderr", "truncated", "timedOut",
                                            "timeoutMs", "durationMs", "env"}));
  EXPECT_TRUE(j["exitCode"].is_null());
  EXPECT_EQ(j["signal"], "SIGKILL");
  EXPECT_EQ(j["stdout"], "\uFFFD");
  EXPECT_EQ(j.dump(), nlohmann::ordered_json::parse(j.dump()).dump());  // valid JSON

  o.network_note = "note";
  o.exit_code = 0;
  o.signal.reset();
  j = BuildReceipt(o);
  EXPECT_EQ(j.back(), "note");
  EXPECT_EQ(j["exitCode"], 0);
  EXPECT_TRUE(j["signal"].is_null());
}

TEST(SignalName, NamesAndNumbers) {
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGSYS), "SIGSYS");
}

}  // namespace
}  // namespace skillmcp
