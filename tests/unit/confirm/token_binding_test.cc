// The token binds the script's identity beside the willRun: the same preview for another
// file (or the same file with other bytes) is DRAFT_CHANGED.
#include <gtest/gtest.h>

#include "broker/confirm/tokens.h"

namespace skillmcp {
namespace {

WillRun Sample(std::string identity) {
  WillRun w;
  w.skill = "demo";
  w.interpreter = "node";
  w.argv = {"scripts/run.js"};
  w.cwd = "/srv/skills/demo";
  w.timeout_ms = 60000;
  w.script_identity = std::move(identity);
  return w;
}

TEST(TokenBinding, TheScriptIdentityIsBound) {
  auto tokens = ConfirmTokens::CreateRandom();
  ASSERT_TRUE(tokens);
  const WillRun previewed = Sample("64769:1234:17:aa");
  auto issued = tokens->Issue(previewed, 100, 600);
  ASSERT_TRUE(issued);
  // The shown willRun is the same; only the file behind it differs.
  EXPECT_EQ(WillRunJson(previewed).dump(), WillRunJson(Sample("64769:1234:17:bb")).dump());
  EXPECT_EQ(tokens->Check(issued->token, Sample("64769:1234:17:bb"), 101),
            TokenVerdict::kDraftChanged);
  EXPECT_EQ(tokens->Check(issued->token, Sample("64769:9999:17:aa"), 101),
            TokenVerdict::kDraftChanged);
  EXPECT_EQ(tokens->Check(issued->token, Sample(""), 101), TokenVerdict::kDraftChanged);
  EXPECT_EQ(tokens->CheckAndSpend(issued->token, previewed, 101), TokenVerdict::kValid);
}

TEST(TokenBinding, TheIdentityCannotBeMovedIntoTheShownFields) {
  // The separator keeps "a" + "b|" apart from "ab" + "|": no two bindings share a hash
  // by shifting bytes between the willRun and the identity.
  auto tokens = ConfirmTokens::CreateRandom();
  ASSERT_TRUE(tokens);
  WillRun a = Sample("x");
  auto issued = tokens->Issue(a, 100, 600);
  ASSERT_TRUE(issued);
  WillRun b = Sample("");
  b.cwd += "x";
  EXPECT_EQ(tokens->Check(issued->token, b, 101), TokenVerdict::kDraftChanged);
}

}  // namespace
}  // namespace skillmcp
