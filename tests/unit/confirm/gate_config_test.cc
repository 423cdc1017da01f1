#include "broker/confirm/gate_config.h"

#include <gtest/gtest.h>

#include "tests/unit/grants/fake_env.h"

namespace skillmcp {
namespace {

using testing::FakeEnv;

GateConfig Parse(std::initializer_list<std::pair<const char*, const char*>> vars) {
  FakeEnv env;
  for (const auto& [name, value] : vars) env.vars[name] = value;
  return ParseGateConfig(env.get());
}

TEST(GateConfig, Defaults) {
  GateConfig config = Parse({});
  EXPECT_EQ(config.mode, ConfirmMode::kAskUser);
  EXPECT_TRUE(config.elicitation);
  EXPECT_EQ(config.ttl_seconds, 600);
  EXPECT_FALSE(config.refusal.has_value());
  EXPECT_TRUE(config.warnings.empty());
}

TEST(GateConfig, KnownModes) {
  EXPECT_EQ(Parse({{"MCP_CONFIRM_MODE", "ask-user"}}).mode, ConfirmMode::kAskUser);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_MODE", "auto"}}).mode, ConfirmMode::kAuto);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_MODE", "refuse"}}).mode, ConfirmMode::kRefuse);
  for (const char* value : {"ask-user", "auto", "refuse"}) {
    EXPECT_TRUE(Parse({{"MCP_CONFIRM_MODE", value}}).warnings.empty()) << value;
  }
  EXPECT_EQ(ConfirmModeName(ConfirmMode::kAskUser), "ask-user");
  EXPECT_EQ(ConfirmModeName(ConfirmMode::kAuto), "auto");
  EXPECT_EQ(ConfirmModeName(ConfirmMode::kRefuse), "refuse");
}

TEST(GateConfig, UnrecognisedModeActsAsRefuseWithOneWarning) {
  for (const char* value : {"AUTO", "yes", "auto ", "ask_user", "off", "none"}) {
    GateConfig config = Parse({{"MCP_CONFIRM_MODE", value}});
    EXPECT_EQ(config.mode, ConfirmMode::kRefuse) << value;
    ASSERT_EQ(config.warnings.size(), 1u) << value;
    EXPECT_NE(config.warnings[0].find("MCP_CONFIRM_MODE"), std::string::npos);
    EXPECT_FALSE(config.refusal.has_value());
  }
}

// Blank and placeholder values are unset: the default applies.
TEST(GateConfig, BlankOrPlaceholderIsDefault) {
  EXPECT_EQ(Parse({{"MCP_CONFIRM_MODE", "  "}}).mode, ConfirmMode::kAskUser);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_MODE", "${MCP_CONFIRM_MODE}"}}).mode, ConfirmMode::kAskUser);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_TTL_SECONDS", ""}}).ttl_seconds, 600);
}

TEST(GateConfig, Elicitation) {
  EXPECT_TRUE(Parse({{"MCP_CONFIRM_ELICITATION", "on"}}).elicitation);
  EXPECT_TRUE(Parse({{"MCP_CONFIRM_ELICITATION", "on"}}).warnings.empty());
  EXPECT_FALSE(Parse({{"MCP_CONFIRM_ELICITATION", "off"}}).elicitation);
  EXPECT_TRUE(Parse({{"MCP_CONFIRM_ELICITATION", "off"}}).warnings.empty());
  for (const char* value : {"OFF", "false", "0", "no"}) {
    GateConfig config = Parse({{"MCP_CONFIRM_ELICITATION", value}});
    EXPECT_TRUE(config.elicitation) << value;
    ASSERT_EQ(config.warnings.size(), 1u) << value;
    EXPECT_NE(config.warnings[0].find("MCP_CONFIRM_ELICITATION"), std::string::npos);
  }
}

TEST(GateConfig, GoodTtls) {
  EXPECT_EQ(Parse({{"MCP_CONFIRM_TTL_SECONDS", "1"}}).ttl_seconds, 1);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_TTL_SECONDS", "120"}}).ttl_seconds, 120);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_TTL_SECONDS", "0600"}}).ttl_seconds, 600);
  EXPECT_EQ(Parse({{"MCP_CONFIRM_TTL_SECONDS", "86400"}}).ttl_seconds, 86400);
  EXPECT_FALSE(Parse({{"MCP_CONFIRM_TTL_SECONDS", "86400"}}).refusal.has_value());
}

TEST(GateConfig, BadTtlRefusesEveryRun) {
  for (const char* value : {"0", "-5", "+5", "10s", "1e3", "3.5", " 60", "60 ", "0x10", "86401",
                            "99999999999999999999999", "sixty"}) {
    GateConfig config = Parse({{"MCP_CONFIRM_TTL_SECONDS", value}});
    ASSERT_TRUE(config.refusal.has_value()) << value;
    EXPECT_NE(config.refusal->find("MCP_CONFIRM_TTL_SECONDS"), std::string::npos);
    EXPECT_EQ(config.warnings.size(), 1u) << value;
  }
}

TEST(GateConfig, LongValuesAreShortenedInWarnings) {
  std::string huge(5000, 'x');
  FakeEnv env;
  env.vars["MCP_CONFIRM_MODE"] = huge;
  GateConfig config = ParseGateConfig(env.get());
  ASSERT_EQ(config.warnings.size(), 1u);
  EXPECT_LT(config.warnings[0].size(), 300u);
}

TEST(GateStep, BadConfigurationRefusesEverything) {
  GateConfig config = Parse({{"MCP_CONFIRM_TTL_SECONDS", "0"}});
  for (bool elicits : {false, true}) {
    for (bool token : {false, true}) {
      EXPECT_EQ(NextGateStep(config, elicits, token), GateStep::kRefuse);
    }
  }
}

TEST(GateStep, PromptWhenTheClientCanShowOne) {
  GateConfig config = Parse({});
  EXPECT_EQ(NextGateStep(config, true, false), GateStep::kElicit);
  EXPECT_EQ(NextGateStep(config, true, true), GateStep::kElicit);
  // Elicitation wins over refuse mode: refuse is for clients that cannot prompt.
  EXPECT_EQ(NextGateStep(Parse({{"MCP_CONFIRM_MODE", "refuse"}}), true, false), GateStep::kElicit);
}

TEST(GateStep, ElicitationOffUsesTheModeForEveryClient) {
  GateConfig config = Parse({{"MCP_CONFIRM_ELICITATION", "off"}});
  EXPECT_EQ(NextGateStep(config, true, false), GateStep::kIssueToken);
  EXPECT_EQ(NextGateStep(config, true, true), GateStep::kCheckToken);
  GateConfig refuse = Parse({{"MCP_CONFIRM_ELICITATION", "off"}, {"MCP_CONFIRM_MODE", "refuse"}});
  EXPECT_EQ(NextGateStep(refuse, true, false), GateStep::kRefuse);
}

TEST(GateStep, TwoStepModes) {
  for (const char* mode : {"ask-user", "auto"}) {
    GateConfig config = Parse({{"MCP_CONFIRM_MODE", mode}});
    EXPECT_EQ(NextGateStep(config, false, false), GateStep::kIssueToken) << mode;
    EXPECT_EQ(NextGateStep(config, false, true), GateStep::kCheckToken) << mode;
  }
}

TEST(GateStep, RefuseModeHonoursNoToken) {
  for (const char* mode : {"refuse", "bogus"}) {
    GateConfig config = Parse({{"MCP_CONFIRM_MODE", mode}});
    EXPECT_EQ(NextGateStep(config, false, false), GateStep::kRefuse) << mode;
    EXPECT_EQ(NextGateStep(config, false, true), GateStep::kRefuse) << mode;
  }
}

TEST(ClientTakesFormPrompt, ModesAndRevisions) {
  using nlohmann::json;
  const json empty = {{"elicitation", json::object()}};
  const json form = {{"elicitation", {{"form", json::object()}}}};
  const json url = {{"elicitation", {{"url", json::object()}}}};
  const json both = {{"elicitation", {{"form", json::object()}, {"url", json::object()}}}};
  EXPECT_TRUE(ClientTakesFormPrompt(empty, "2025-11-25"));
  EXPECT_TRUE(ClientTakesFormPrompt(form, "2025-11-25"));
  EXPECT_TRUE(ClientTakesFormPrompt(both, "2025-11-25"));
  EXPECT_FALSE(ClientTakesFormPrompt(url, "2025-11-25")) << "url mode only: no form prompt";
  EXPECT_TRUE(ClientTakesFormPrompt(empty, "2025-06-18"));
  // Revisions without elicitation, whatever the client lists.
  EXPECT_FALSE(ClientTakesFormPrompt(empty, "2025-03-26"));
  EXPECT_FALSE(ClientTakesFormPrompt(form, "2024-11-05"));
  // No capability, or not an object.
  EXPECT_FALSE(ClientTakesFormPrompt(json::object(), "2025-11-25"));
  EXPECT_FALSE(ClientTakesFormPrompt({{"elicitation", true}}, "2025-11-25"));
  EXPECT_FALSE(ClientTakesFormPrompt(json(), "2025-11-25"));
}

}  // namespace
}  // namespace skillmcp
