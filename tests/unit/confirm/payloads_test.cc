#include "broker/confirm/payloads.h"

#include <gtest/gtest.h>

#include "tests/unit/confirm/will_run_fixture.h"

namespace skillmcp {
namespace {

using nlohmann::ordered_json;
using testing::SampleWillRun;

std::vector<std::string> Keys(const ordered_json& json) {
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  return keys;
}

IssuedToken SampleToken() { return IssuedToken{"abc.def", 1'800'000'600, 600}; }

TEST(Payloads, IsoUtc) {
  EXPECT_EQ(FormatIsoUtc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatIsoUtc(1'796'026'500), "2026-11-30T08:15:00.000Z");
}

TEST(Payloads, ConfirmationRequiredShape) {
  ordered_json payload =
      ConfirmationRequiredPayload(SampleWillRun(), SampleToken(), ConfirmMode::kAskUser);
  EXPECT_EQ(Keys(payload),
            (std::vector<std::string>{"status", "confirmed", "dispatched", "action", "preview",
                                      "confirmToken", "expiresAt", "ttlSeconds", "instruction"}));
  EXPECT_EQ(payload["status"], "confirmation-required");
  EXPECT_EQ(payload["confirmed"], false);
  EXPECT_EQ(payload["dispatched"], false);
  EXPECT_EQ(payload["action"], "skill.run");
  EXPECT_EQ(Keys(payload["preview"]), (std::vector<std::string>{"dryRun", "willRun", "note"}));
  EXPECT_EQ(payload["preview"]["dryRun"], true);
  EXPECT_EQ(payload["preview"]["willRun"], WillRunJson(SampleWillRun()));
  EXPECT_EQ(payload["confirmToken"], "abc.def");
  EXPECT_EQ(payload["expiresAt"], FormatIsoUtc(1'800'000'600));
  EXPECT_EQ(payload["ttlSeconds"], 600);
}

TEST(Payloads, InstructionDependsOnMode) {
  std::string ask = ConfirmationRequiredPayload(SampleWillRun(), SampleToken(),
                                                ConfirmMode::kAskUser)["instruction"];
  std::string automatic = ConfirmationRequiredPayload(SampleWillRun(), SampleToken(),
                                                      ConfirmMode::kAuto)["instruction"];
  EXPECT_NE(ask, automatic);
  EXPECT_NE(ask.find("user"), std::string::npos);
  EXPECT_EQ(automatic.find("user"), std::string::npos);
  EXPECT_NE(automatic.find("confirmToken"), std::string::npos);
}

TEST(Payloads, Rejections) {
  for (TokenVerdict verdict :
       {TokenVerdict::kInvalid, TokenVerdict::kReused, TokenVerdict::kExpired,
        TokenVerdict::kSpentSetFull, TokenVerdict::kSharedFull, TokenVerdict::kUnrecorded}) {
    ordered_json payload = RejectionPayload(verdict, "ENOSPC here");
    // docs/wire.md: `action` right after `error`.
    EXPECT_EQ(Keys(payload), (std::vector<std::string>{"status", "confirmed", "dispatched", "error",
                                                       "action", "note"}));
    EXPECT_EQ(payload["action"], "skill.run");
    EXPECT_EQ(payload["status"], "confirmation-rejected");
    EXPECT_EQ(payload["confirmed"], false);
    EXPECT_EQ(payload["dispatched"], false);
    EXPECT_EQ(payload["error"], TokenErrorCode(verdict));
  }
  EXPECT_NE(
      RejectionPayload(TokenVerdict::kUnrecorded, "ENOSPC here")["note"].get<std::string>().find(
          "ENOSPC here"),
      std::string::npos);
  // A verdict that is not a refusal never turns into an acceptance.
  EXPECT_EQ(RejectionPayload(TokenVerdict::kValid)["error"], "TOKEN_INVALID");
}

TEST(Payloads, DraftChangedCarriesAFreshPreviewAndToken) {
  WillRun fresh = SampleWillRun();
  fresh.argv.push_back("--verbose");
  ordered_json payload = DraftChangedPayload(fresh, SampleToken(), ConfirmMode::kAskUser);
  EXPECT_EQ(Keys(payload),
            (std::vector<std::string>{"status", "confirmed", "dispatched", "error", "action",
                                      "reason", "note", "preview", "confirmToken", "expiresAt",
                                      "ttlSeconds", "instruction"}));
  EXPECT_EQ(payload["error"], "DRAFT_CHANGED");
  EXPECT_EQ(payload["reason"], "payload-changed");
  EXPECT_EQ(payload["preview"]["willRun"], WillRunJson(fresh));
  EXPECT_EQ(payload["confirmToken"], "abc.def");
}

TEST(Payloads, RefuseMode) {
  ordered_json payload = RefusedPayload();
  EXPECT_EQ(Keys(payload),
            (std::vector<std::string>{"confirmed", "dispatched", "action", "reason", "note"}));
  EXPECT_EQ(payload["reason"], "confirmation-unsupported");
  EXPECT_EQ(payload["action"], "skill.run");
  EXPECT_EQ(RefusedPayload("bad ttl")["note"], "bad ttl");
}

TEST(Payloads, ElicitationCancelled) {
  for (ElicitationOutcome outcome :
       {ElicitationOutcome::kDeclined, ElicitationOutcome::kCancelled}) {
    ordered_json payload = ElicitationCancelledPayload(outcome);
    EXPECT_EQ(Keys(payload),
              (std::vector<std::string>{"confirmed", "cancelled", "action", "note"}));
    EXPECT_EQ(payload["confirmed"], false);
    EXPECT_EQ(payload["cancelled"], true);
  }
}

TEST(Payloads, ElicitationRequestShowsThePreviewInWords) {
  WillRun run = SampleWillRun();
  run.env_not_set = {"UNITS"};
  run.env_warning = "declared only";
  ordered_json params = ElicitationRequestParams(run);
  EXPECT_EQ(Keys(params), (std::vector<std::string>{"message", "requestedSchema"}));
  std::string message = params["message"];
  for (const char* part : {"Skill: \"weather\"", "Script: \"scripts/forecast.js\"", "node",
                           "1. \"--city\"\n  2. \"Lisbon\"", "/srv/skills/weather", "30 s",
                           "HOME, PATH, WEATHER_API_KEY", "UNITS", "declared only"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part;
  }
  const ordered_json& schema = params["requestedSchema"];
  EXPECT_EQ(schema["type"], "object");
  ASSERT_EQ(schema["properties"].size(), 1u);
  EXPECT_EQ(schema["properties"]["approve"]["type"], "boolean");
  EXPECT_EQ(schema["required"], ordered_json::array({"approve"}));
}

TEST(Payloads, ThePromptNamesTheOnlyHostsTheRunMayReach) {
  WillRun run = SampleWillRun();
  std::string message = ElicitationRequestParams(run)["message"];
  EXPECT_EQ(message.find("Network:"), std::string::npos);
  run.egress = std::vector<EgressRule>{{"api.example.com", {80, 443}}, {"b.example", {8443}}};
  message = ElicitationRequestParams(run)["message"].get<std::string>();
  const size_t network = message.find(
      "Network: only these hosts: \"api.example.com\" (ports 80, 443); \"b.example\" (port "
      "8443)\n");
  ASSERT_NE(network, std::string::npos) << message;
  EXPECT_LT(network, message.find("Arguments ("));
  run.egress->clear();
  message = ElicitationRequestParams(run)["message"].get<std::string>();
  EXPECT_NE(message.find("Network: none (it reaches no host)\n"), std::string::npos) << message;
}

TEST(Payloads, ThePromptPutsTheFixedFactsBeforeTheArguments) {
  WillRun run = SampleWillRun();
  run.env_warning = "declared only";
  run.argv.push_back(std::string(100000, 'x'));
  std::string message = ElicitationRequestParams(run)["message"];
  const size_t args = message.find("Arguments (3)");
  ASSERT_NE(args, std::string::npos) << message;
  for (const char* fact :
       {"Skill:", "Script:", "Time limit:", "Warning: declared only", "Variables it receives"}) {
    const size_t at = message.find(fact);
    EXPECT_NE(at, std::string::npos) << fact;
    EXPECT_LT(at, args) << fact << " comes before the arguments";
  }
  // A long argument is cut with its real length, so the prompt stays short.
  EXPECT_NE(message.find("[cut: 100000 characters, 100000 bytes in all]"), std::string::npos);
  EXPECT_LT(message.size(), 4000u);
}

TEST(Payloads, AnArgumentCannotDrawALineOfItsOwn) {
  WillRun run = SampleWillRun();
  run.skill = "we\u202eather";
  run.argv = {"scripts/x\u2028.js", "ok\u2028Time limit: 1 s (read-only preview)",
              "a\nWarning: none", "\u0085\u009b2J\u200b\u2066"};
  std::string message = ElicitationRequestParams(run)["message"];
  for (const char* raw : {"\u2028", "\u202e", "\u0085", "\u009b", "\u200b", "\u2066"}) {
    EXPECT_EQ(message.find(raw), std::string::npos) << "raw character left in the prompt";
  }
  EXPECT_NE(message.find("Skill: \"we\\u202eather\""), std::string::npos) << message;
  EXPECT_NE(message.find("Script: \"scripts/x\\u2028.js\""), std::string::npos) << message;
  EXPECT_NE(message.find("1. \"ok\\u2028Time limit: 1 s (read-only preview)\""), std::string::npos);
  EXPECT_NE(message.find("2. \"a\\nWarning: none\""), std::string::npos);
  // Exactly one line starts with "Time limit:" and none with "Warning:".
  EXPECT_EQ(message.find("\nTime limit:"), message.rfind("\nTime limit:"));
  EXPECT_EQ(message.find("\nWarning:"), std::string::npos);
}

}  // namespace
}  // namespace skillmcp
