#include "broker/confirm/tokens.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/unit/confirm/will_run_fixture.h"

namespace skillmcp {
namespace {

using testing::SampleWillRun;

using testing::kNow;
using testing::kTtl;

class Tokens : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = ConfirmTokens::CreateRandom();
    ASSERT_NE(tokens_, nullptr);
  }
  std::string IssueSample(int64_t now = kNow) {
    std::optional<IssuedToken> issued = tokens_->Issue(SampleWillRun(), now, kTtl);
    EXPECT_TRUE(issued.has_value());
    return issued ? issued->token : std::string();
  }
  std::unique_ptr<ConfirmTokens> tokens_;
};

TEST_F(Tokens, IssuedTokenIsUrlSafeAndCarriesExpiry) {
  std::optional<IssuedToken> issued = tokens_->Issue(SampleWillRun(), kNow, kTtl);
  ASSERT_TRUE(issued.has_value());
  EXPECT_EQ(issued->expires_at, kNow + kTtl);
  EXPECT_EQ(issued->ttl_seconds, kTtl);
  EXPECT_EQ(issued->token.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."),
            std::string::npos);
  EXPECT_EQ(std::count(issued->token.begin(), issued->token.end(), '.'), 1);
  // Two issues of the same willRun differ (random nonce): each token is its own approval.
  EXPECT_NE(issued->token, IssueSample());
}

TEST_F(Tokens, RoundTripThenReuse) {
  std::string token = IssueSample();
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + 2), TokenVerdict::kValid);  // no spend
  EXPECT_EQ(tokens_->CheckAndSpend(token, SampleWillRun(), kNow + 3), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->CheckAndSpend(token, SampleWillRun(), kNow + 4), TokenVerdict::kReused);
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + 5), TokenVerdict::kReused);
}

TEST_F(Tokens, SpendIsSeparateFromCheck) {
  std::string token = IssueSample();
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  EXPECT_EQ(tokens_->Spend(token, kNow), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->SpentCount(), 1u);
  EXPECT_EQ(tokens_->Spend(token, kNow), TokenVerdict::kReused);
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow), TokenVerdict::kReused);
  EXPECT_EQ(tokens_->Spend("not-a-token", kNow), TokenVerdict::kInvalid);
}

TEST_F(Tokens, ExpiresAtTheDeadline) {
  std::string token = IssueSample();
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + kTtl - 1), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + kTtl), TokenVerdict::kExpired);
  EXPECT_EQ(tokens_->CheckAndSpend(token, SampleWillRun(), kNow + kTtl + 5),
            TokenVerdict::kExpired);
  EXPECT_EQ(tokens_->Spend(token, kNow + kTtl + 5), TokenVerdict::kExpired);
}

// Check order: signature/claims, then spent, then expired, then payload.
TEST_F(Tokens, CheckOrder) {
  WillRun changed = SampleWillRun();
  changed.argv.push_back("--extra");
  std::string spent = IssueSample();
  ASSERT_EQ(tokens_->CheckAndSpend(spent, SampleWillRun(), kNow), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->Check(spent, changed, kNow + 1), TokenVerdict::kReused);  // before payload
  std::optional<IssuedToken> issued = tokens_->Issue(SampleWillRun(), kNow + 1, kTtl);
  ASSERT_TRUE(issued.has_value());
  const std::string& token = issued->token;
  EXPECT_EQ(tokens_->Check(token, changed, issued->expires_at), TokenVerdict::kExpired);
  std::string forged = token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  EXPECT_EQ(tokens_->Check(forged, changed, issued->expires_at), TokenVerdict::kInvalid);
}

TEST_F(Tokens, ChangedDraftKeepsTheOldTokenUsable) {
  std::string token = IssueSample();
  std::vector<WillRun> changes;
  WillRun argv = SampleWillRun();
  argv.argv[2] = "Porto";
  changes.push_back(argv);
  WillRun script = SampleWillRun();
  script.argv[0] = "scripts/other.js";
  changes.push_back(script);
  WillRun skill = SampleWillRun();
  skill.skill = "weather2";
  changes.push_back(skill);
  WillRun env = SampleWillRun();
  env.env_names.push_back("GITHUB_TOKEN");
  changes.push_back(env);
  WillRun cwd = SampleWillRun();
  cwd.cwd = "/srv/skills/other";
  changes.push_back(cwd);
  WillRun timeout = SampleWillRun();
  timeout.timeout_ms = 300000;
  changes.push_back(timeout);
  WillRun fewer_args = SampleWillRun();
  fewer_args.argv.pop_back();
  changes.push_back(fewer_args);
  for (const WillRun& change : changes) {
    EXPECT_EQ(tokens_->CheckAndSpend(token, change, kNow + 1), TokenVerdict::kDraftChanged);
  }
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  EXPECT_EQ(tokens_->CheckAndSpend(token, SampleWillRun(), kNow + 2), TokenVerdict::kValid);
}

TEST_F(Tokens, ForgedMacOrClaimsAreInvalid) {
  std::string token = IssueSample();
  const size_t dot = token.find('.');
  for (size_t i : {size_t{0}, dot / 2, dot - 1, dot + 1, token.size() / 2 + dot / 2}) {
    std::string forged = token;
    forged[i] = forged[i] == 'x' ? 'y' : 'x';
    EXPECT_EQ(tokens_->Check(forged, SampleWillRun(), kNow), TokenVerdict::kInvalid) << i;
  }
  // The claims of one token with the MAC of another.
  std::string other = IssueSample();
  std::string spliced = token.substr(0, dot) + other.substr(other.find('.'));
  EXPECT_EQ(tokens_->Check(spliced, SampleWillRun(), kNow), TokenVerdict::kInvalid);
}

TEST_F(Tokens, TruncatedPaddedOrTrailingBytesAreInvalid) {
  std::string token = IssueSample();
  const size_t dot = token.find('.');
  std::vector<std::string> bad = {
      "",
      ".",
      token.substr(0, token.size() - 1),
      token.substr(0, dot),
      token.substr(0, dot + 1),
      token.substr(dot),
      token + "=",
      token + "==",
      token + "A",
      token + "\n",
      " " + token,
      token + ".",
      token.substr(0, dot) + "=" + token.substr(dot),
      token.substr(0, dot) + ".." + token.substr(dot + 1),
      token + "." + token.substr(dot + 1),
      std::string(100000, 'A'),
      token.substr(0, dot) + "." + std::string(43, '+'),
  };
  for (const std::string& candidate : bad) {
    EXPECT_EQ(tokens_->Check(candidate, SampleWillRun(), kNow), TokenVerdict::kInvalid)
        << candidate.substr(0, 200);
  }
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow), TokenVerdict::kValid);
}

// 32 MAC bytes take 43 base64 characters with 2 spare bits; a second spelling of the same
// bytes must not pass as (another) token.
TEST_F(Tokens, NonCanonicalBase64IsInvalid) {
  std::string token = IssueSample();
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t value = alphabet.find(token.back());
  ASSERT_NE(value, std::string::npos);
  ASSERT_EQ(value & 3u, 0u);  // canonical: spare bits are zero
  for (size_t spare = 1; spare < 4; ++spare) {
    std::string variant = token;
    variant.back() = alphabet[value | spare];
    EXPECT_EQ(tokens_->Check(variant, SampleWillRun(), kNow), TokenVerdict::kInvalid);
  }
}

TEST_F(Tokens, AnotherRandomKeyIsInvalid) {
  std::unique_ptr<ConfirmTokens> other = ConfirmTokens::CreateRandom();
  ASSERT_NE(other, nullptr);
  std::optional<IssuedToken> foreign = other->Issue(SampleWillRun(), kNow, kTtl);
  ASSERT_TRUE(foreign.has_value());
  EXPECT_EQ(tokens_->Check(foreign->token, SampleWillRun(), kNow), TokenVerdict::kInvalid);
  EXPECT_EQ(other->Check(IssueSample(), SampleWillRun(), kNow), TokenVerdict::kInvalid);
}

TEST_F(Tokens, TokenForAnotherToolIsInvalid) {
  std::optional<IssuedToken> other_tool = tokens_->Issue(SampleWillRun(), kNow, kTtl, "skill_file");
  ASSERT_TRUE(other_tool.has_value());
  EXPECT_EQ(tokens_->Check(other_tool->token, SampleWillRun(), kNow), TokenVerdict::kInvalid);
}

TEST(TokenSecret, SameSecretSurvivesARestart) {
  const std::string secret = "correct horse battery staple, but longer";
  std::unique_ptr<ConfirmTokens> before = ConfirmTokens::CreateFromSecret(secret);
  std::unique_ptr<ConfirmTokens> after = ConfirmTokens::CreateFromSecret(secret);
  std::unique_ptr<ConfirmTokens> other = ConfirmTokens::CreateFromSecret(secret + "!");
  std::unique_ptr<ConfirmTokens> random = ConfirmTokens::CreateRandom();
  ASSERT_TRUE(before && after && other && random);
  std::optional<IssuedToken> issued = before->Issue(SampleWillRun(), kNow, kTtl);
  ASSERT_TRUE(issued.has_value());
  EXPECT_EQ(after->Check(issued->token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
  EXPECT_EQ(other->Check(issued->token, SampleWillRun(), kNow + 1), TokenVerdict::kInvalid);
  EXPECT_EQ(random->Check(issued->token, SampleWillRun(), kNow + 1), TokenVerdict::kInvalid);
  // Single use is per process: the restarted process has its own spent set.
  EXPECT_EQ(before->CheckAndSpend(issued->token, SampleWillRun(), kNow + 2), TokenVerdict::kValid);
  EXPECT_EQ(after->CheckAndSpend(issued->token, SampleWillRun(), kNow + 2), TokenVerdict::kValid);
}

TEST_F(Tokens, SpentSetPrunesExpiredEntries) {
  std::string first = IssueSample(kNow);
  std::string second = IssueSample(kNow + 100);
  ASSERT_EQ(tokens_->Spend(first, kNow + 100), TokenVerdict::kValid);
  ASSERT_EQ(tokens_->Spend(second, kNow + 100), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->SpentCount(), 2u);
  // First expires at kNow+600: its entry leaves; the second stays until kNow+700.
  EXPECT_EQ(tokens_->Check(second, SampleWillRun(), kNow + kTtl), TokenVerdict::kReused);
  EXPECT_EQ(tokens_->SpentCount(), 1u);
  EXPECT_EQ(tokens_->Check(first, SampleWillRun(), kNow + kTtl), TokenVerdict::kExpired);
  EXPECT_EQ(tokens_->Check(second, SampleWillRun(), kNow + kTtl + 100), TokenVerdict::kExpired);
  EXPECT_EQ(tokens_->SpentCount(), 0u);
}

// A clock stepped backwards must not revive a spent token whose entry was pruned.
TEST_F(Tokens, ClockGoingBackDoesNotReviveAPrunedToken) {
  std::string token = IssueSample();
  ASSERT_EQ(tokens_->CheckAndSpend(token, SampleWillRun(), kNow), TokenVerdict::kValid);
  EXPECT_EQ(tokens_->Check(token, SampleWillRun(), kNow + kTtl + 1), TokenVerdict::kExpired);
  ASSERT_EQ(tokens_->SpentCount(), 0u);
  EXPECT_NE(tokens_->CheckAndSpend(token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
}

TEST_F(Tokens, FullSpentSetRefusesRatherThanForgets) {
  std::vector<std::string> issued;
  for (size_t i = 0; i <= kMaxSpentTokens; ++i) issued.push_back(IssueSample());
  for (size_t i = 0; i < kMaxSpentTokens; ++i) {
    ASSERT_EQ(tokens_->Spend(issued[i], kNow), TokenVerdict::kValid) << i;
  }
  EXPECT_EQ(tokens_->CheckAndSpend(issued.back(), SampleWillRun(), kNow),
            TokenVerdict::kSpentSetFull);
  EXPECT_EQ(tokens_->CheckAndSpend(issued.front(), SampleWillRun(), kNow),
            TokenVerdict::kReused);  // nothing was evicted
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kSpentSetFull), "TOKEN_EXPIRED");
}

// The broker is single-threaded: pipelined calls carrying one token reach CheckAndSpend
// one after another, and only the first may pass.
TEST_F(Tokens, PipelinedDoubleSpendRunsOnce) {
  for (int round = 0; round < 20; ++round) {
    std::string token = IssueSample();
    int valid = 0;
    int reused = 0;
    for (int i = 0; i < 8; ++i) {
      TokenVerdict verdict = tokens_->CheckAndSpend(token, SampleWillRun(), kNow);
      if (verdict == TokenVerdict::kValid) ++valid;
      if (verdict == TokenVerdict::kReused) ++reused;
    }
    EXPECT_EQ(valid, 1);
    EXPECT_EQ(reused, 7);
  }
}

TEST_F(Tokens, UnconfirmableRunsGetNoToken) {
  EXPECT_FALSE(tokens_->Issue(SampleWillRun(), kNow, 0).has_value());
  EXPECT_FALSE(tokens_->Issue(SampleWillRun(), kNow, -5).has_value());
  WillRun bad = SampleWillRun();
  bad.cwd = "/srv/\xc3";
  EXPECT_FALSE(tokens_->Issue(bad, kNow, kTtl).has_value());
}

// The key is PROT_NONE between uses: reading it from this process faults.
TEST(TokenKey, UnreadableWhileIdle) {
  std::unique_ptr<ConfirmTokens> tokens = ConfirmTokens::CreateRandom();
  ASSERT_NE(tokens, nullptr);
  ASSERT_TRUE(tokens->Issue(SampleWillRun(), kNow, kTtl).has_value());  // used, then locked
  const volatile unsigned char* key =
      static_cast<const volatile unsigned char*>(tokens->KeyAddressForTesting());
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        unsigned char c = key[0];
        (void)c;
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}

TEST(TokenCodes, WireValues) {
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kInvalid), "TOKEN_INVALID");
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kReused), "TOKEN_REUSED");
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kExpired), "TOKEN_EXPIRED");
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kDraftChanged), "DRAFT_CHANGED");
}

}  // namespace
}  // namespace skillmcp
