#include "broker/confirm/will_run.h"

#include <gtest/gtest.h>

#include "tests/unit/confirm/will_run_fixture.h"

namespace skillmcp {
namespace {

using testing::SampleWillRun;

TEST(WillRun, KeysInWireOrderOptionalOmitted) {
  WillRun run = SampleWillRun();
  EXPECT_EQ(WillRunJson(run).dump(),
            R"({"skill":"weather","interpreter":"node",)"
            R"("argv":["scripts/forecast.js","--city","Lisbon"],"cwd":"/srv/skills/weather",)"
            R"("timeoutMs":30000,"envNames":["HOME","PATH","WEATHER_API_KEY"]})");
}

TEST(WillRun, OptionalKeysWhenPresent) {
  WillRun run = SampleWillRun();
  run.env_not_set = {"UNITS"};
  run.env_warning = "careful";
  nlohmann::ordered_json json = WillRunJson(run);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"skill", "interpreter", "argv", "cwd", "timeoutMs",
                                            "envNames", "envNotSet", "envWarning"}));
  EXPECT_EQ(json["envNotSet"], nlohmann::ordered_json::array({"UNITS"}));
  EXPECT_EQ(json["envWarning"], "careful");
  // Empty envNames stays (an empty list), never null.
  run.env_names.clear();
  EXPECT_TRUE(WillRunJson(run)["envNames"].is_array());
}

TEST(WillRun, CanonicalIsSortedAndCompact) {
  WillRun run = SampleWillRun();
  run.env_not_set = {"UNITS"};
  std::optional<std::string> canonical = CanonicalWillRun(run);
  ASSERT_TRUE(canonical.has_value());
  EXPECT_EQ(*canonical,
            R"({"argv":["scripts/forecast.js","--city","Lisbon"],"cwd":"/srv/skills/weather",)"
            R"("envNames":["HOME","PATH","WEATHER_API_KEY"],"envNotSet":["UNITS"],)"
            R"("interpreter":"node","skill":"weather","timeoutMs":30000})");
}

// The pinned path is shown only where the operator configured the set, right after the
// interpreter, and the token binds it: another pin is another willRun.
TEST(WillRun, InterpreterPathShownAndBoundWhenSet) {
  WillRun run = SampleWillRun();
  const std::string unset = *CanonicalWillRun(run);
  EXPECT_EQ(unset.find("interpreterPath"), std::string::npos);
  run.interpreter = "python3";
  run.interpreter_path = "/usr/bin/python3.11";
  nlohmann::ordered_json json = WillRunJson(run);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"skill", "interpreter", "interpreterPath", "argv",
                                            "cwd", "timeoutMs", "envNames"}));
  WillRun other = run;
  other.interpreter_path = "/opt/python/bin/python3.11";
  EXPECT_NE(*CanonicalWillRun(run), *CanonicalWillRun(other));
}

// The declared network mode: the allowlist is shown last and bound like the argv; none
// shown is not the same as none allowed.
TEST(WillRun, EgressShownLastAndBound) {
  WillRun run = SampleWillRun();
  const std::string without = *CanonicalWillRun(run);
  EXPECT_EQ(without.find("egress"), std::string::npos);
  run.egress = std::vector<EgressRule>{{"api.example.com", {80, 443}}, {"*.example.org", {443}}};
  nlohmann::ordered_json json = WillRunJson(run);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys.back(), "egress");
  EXPECT_EQ(json["egress"].dump(),
            R"([{"host":"api.example.com","ports":[80,443]},{"host":"*.example.org","ports":[443]}])");
  WillRun narrower = run;
  narrower.egress->pop_back();
  WillRun other_port = run;
  (*other_port.egress)[0].ports = {443};
  WillRun none = run;
  none.egress->clear();
  EXPECT_EQ(WillRunJson(none)["egress"].dump(), "[]");
  const std::string bound = *CanonicalWillRun(run);
  for (const WillRun* w : {&narrower, &other_port, &none})
    EXPECT_NE(*CanonicalWillRun(*w), bound);
  EXPECT_NE(*CanonicalWillRun(none), without);
}

TEST(WillRun, CanonicalDistinguishesArgvSplits) {
  WillRun a = SampleWillRun();
  WillRun b = SampleWillRun();
  b.argv = {"scripts/forecast.js", "--city Lisbon"};
  EXPECT_NE(*CanonicalWillRun(a), *CanonicalWillRun(b));
}

TEST(WillRun, InvalidUtf8IsNotConfirmable) {
  WillRun run = SampleWillRun();
  run.argv.push_back("\xff\xfe");
  EXPECT_FALSE(CanonicalWillRun(run).has_value());
}

}  // namespace
}  // namespace skillmcp
