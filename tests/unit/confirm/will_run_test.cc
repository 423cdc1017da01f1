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
