// The 2026-07-28 round state (docs/wire.md §8) is a confirmation token in a domain of its
// own: a state handed out before the user answered never passes as a confirmToken, and a
// confirmToken never passes as a state.
#include <gtest/gtest.h>

#include <string>

#include "broker/confirm/tokens.h"
#include "tests/unit/confirm/will_run_fixture.h"

namespace skillmcp {
namespace {

using testing::SampleWillRun;

using testing::kNow;
using testing::kTtl;

TEST(RoundState, IsRefusedAsAConfirmToken) {
  auto tokens = ConfirmTokens::CreateRandom();
  ASSERT_NE(tokens, nullptr);
  auto state = tokens->Issue(SampleWillRun(), kNow, kTtl, kSkillRunRoundTool);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(tokens->Check(state->token, SampleWillRun(), kNow), TokenVerdict::kInvalid);
  EXPECT_EQ(tokens->CheckAndSpend(state->token, SampleWillRun(), kNow), TokenVerdict::kInvalid);
  EXPECT_EQ(tokens->Check(state->token, SampleWillRun(), kNow, kSkillRunRoundTool),
            TokenVerdict::kValid);
}

TEST(RoundState, AConfirmTokenIsRefusedAsAState) {
  auto tokens = ConfirmTokens::CreateRandom();
  ASSERT_NE(tokens, nullptr);
  auto token = tokens->Issue(SampleWillRun(), kNow, kTtl);
  ASSERT_TRUE(token.has_value());
  EXPECT_EQ(tokens->CheckAndSpend(token->token, SampleWillRun(), kNow, nullptr, kSkillRunRoundTool),
            TokenVerdict::kInvalid);
  // Still unspent for its own domain.
  EXPECT_EQ(tokens->CheckAndSpend(token->token, SampleWillRun(), kNow), TokenVerdict::kValid);
}

TEST(RoundState, IsSingleUseAndExpires) {
  auto tokens = ConfirmTokens::CreateRandom();
  ASSERT_NE(tokens, nullptr);
  auto state = tokens->Issue(SampleWillRun(), kNow, kTtl, kSkillRunRoundTool);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(tokens->CheckAndSpend(state->token, SampleWillRun(), kNow, nullptr, kSkillRunRoundTool),
            TokenVerdict::kValid);
  EXPECT_EQ(tokens->CheckAndSpend(state->token, SampleWillRun(), kNow, nullptr, kSkillRunRoundTool),
            TokenVerdict::kReused);
  auto later = tokens->Issue(SampleWillRun(), kNow, kTtl, kSkillRunRoundTool);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(tokens->Check(later->token, SampleWillRun(), kNow + kTtl, kSkillRunRoundTool),
            TokenVerdict::kExpired);
}

}  // namespace
}  // namespace skillmcp
