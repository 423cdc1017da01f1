// The host-wide spent record (broker/confirm/spent_dir.h): one token, one run, whichever
// broker with the same key sees it, across a restart; a record that cannot be written
// refuses the run; a directory another user could write is not trusted.
#include "broker/confirm/spent_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "broker/confirm/payloads.h"
#include "broker/confirm/tokens.h"
#include "tests/unit/confirm/will_run_fixture.h"

namespace skillmcp {
namespace {

using testing::SampleWillRun;
namespace fs = std::filesystem;

using testing::kNow;
using testing::kTtl;
// Why not kMaxSharedSpent itself: 65536 files twice took longer than the test's timeout on
// CI's disk; the rule is the same at any cap.
constexpr size_t kSmallCap = 64;
constexpr std::string_view kSecret = "one secret shared by every broker on the host";

class SpentDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spent-dir-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override { fs::remove_all(base_); }

  // A broker: a key from the shared secret and the shared record under base_.
  // `max_live` shrinks the cap on live records, so that a full record is a few files.
  std::unique_ptr<ConfirmTokens> Broker(size_t max_live = kMaxSharedSpent) {
    auto tokens = ConfirmTokens::CreateFromSecret(kSecret);
    EXPECT_NE(tokens, nullptr);
    SpentDir::Opened opened = SpentDir::Open(base_, {});
    EXPECT_NE(opened.dir, nullptr) << opened.error;
    if (opened.dir) opened.dir->set_max_live_for_test(max_live);
    tokens->UseSpentDir(std::move(opened));
    return tokens;
  }
  std::string Issue(ConfirmTokens& tokens) {
    std::optional<IssuedToken> issued = tokens.Issue(SampleWillRun(), kNow, kTtl);
    EXPECT_TRUE(issued.has_value());
    return issued ? issued->token : std::string();
  }
  size_t Records() {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(base_ + "/spent-tokens")) {
      (void)e;
      ++n;
    }
    return n;
  }
  std::string base_;
};

TEST_F(SpentDirTest, TwoBrokersOneSecretOneRun) {
  auto first = Broker();
  auto second = Broker();
  const std::string token = Issue(*first);
  EXPECT_EQ(first->CheckAndSpend(token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
  // The second broker never saw this spend in its own memory: only the shared record.
  EXPECT_EQ(second->CheckAndSpend(token, SampleWillRun(), kNow + 2), TokenVerdict::kReused);
  EXPECT_EQ(Records(), 1u);
}

TEST_F(SpentDirTest, RaceBetweenTwoBrokersHasOneWinner) {
  auto first = Broker();
  auto second = Broker();
  const std::string token = Issue(*first);
  // Both checks pass before either spends (Check spends nothing); O_EXCL decides.
  EXPECT_EQ(first->Check(token, SampleWillRun(), kNow), TokenVerdict::kValid);
  EXPECT_EQ(second->Check(token, SampleWillRun(), kNow), TokenVerdict::kValid);
  EXPECT_EQ(second->Spend(token, kNow), TokenVerdict::kValid);
  EXPECT_EQ(first->Spend(token, kNow), TokenVerdict::kReused);
}

TEST_F(SpentDirTest, RestartWithTheSameSecretStillSeesTheSpend) {
  std::string token;
  {
    auto before = Broker();
    token = Issue(*before);
    EXPECT_EQ(before->CheckAndSpend(token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
  }
  auto after = Broker();
  EXPECT_EQ(after->CheckAndSpend(token, SampleWillRun(), kNow + 2), TokenVerdict::kReused);
}

TEST_F(SpentDirTest, ARecordThatCannotBeWrittenRefusesTheRun) {
  auto broker = Broker();
  const std::string token = Issue(*broker);
  // Works as root too: nothing can be created in a directory that no longer exists.
  ASSERT_EQ(rmdir((base_ + "/spent-tokens").c_str()), 0);
  std::string detail;
  EXPECT_EQ(broker->CheckAndSpend(token, SampleWillRun(), kNow + 1, &detail),
            TokenVerdict::kUnrecorded);
  EXPECT_NE(detail.find("spent-tokens"), std::string::npos) << detail;
  EXPECT_STREQ(TokenErrorCode(TokenVerdict::kUnrecorded), "SPEND_UNRECORDED");
  // Nothing was spent in memory either: the token is refused, not consumed.
  EXPECT_EQ(broker->SpentCount(), 0u);
}

TEST_F(SpentDirTest, NoDirectoryAtAllRefusesEverySpend) {
  auto tokens = ConfirmTokens::CreateFromSecret(kSecret);
  ASSERT_NE(tokens, nullptr);
  tokens->UseSpentDir(OpenSpentDirFromEnv([](std::string_view) { return std::nullopt; }));
  const std::string token = Issue(*tokens);
  std::string detail;
  EXPECT_EQ(tokens->CheckAndSpend(token, SampleWillRun(), kNow + 1, &detail),
            TokenVerdict::kUnrecorded);
  EXPECT_NE(detail.find("SKILL_MCP_STATE_DIR"), std::string::npos) << detail;
  EXPECT_EQ(tokens->SharedRecordError(), detail);
  EXPECT_EQ(Broker()->SharedRecordError(), std::nullopt);
  EXPECT_EQ(ConfirmTokens::CreateRandom()->SharedRecordError(), std::nullopt);
}

TEST_F(SpentDirTest, ExpiredRecordsArePrunedAfterTheGrace) {
  auto broker = Broker();
  const std::string token = Issue(*broker);
  EXPECT_EQ(broker->CheckAndSpend(token, SampleWillRun(), kNow + 1), TokenVerdict::kValid);
  ASSERT_EQ(Records(), 1u);
  // A second token spent long after the first expired: its spend prunes the first record.
  const int64_t later = kNow + kTtl + kPruneGraceSeconds + kPruneEverySeconds;
  std::optional<IssuedToken> fresh = broker->Issue(SampleWillRun(), later, kTtl);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(broker->CheckAndSpend(fresh->token, SampleWillRun(), later), TokenVerdict::kValid);
  EXPECT_EQ(Records(), 1u);
  // The pruned token stays refused, here and on another broker: it has expired.
  EXPECT_EQ(broker->CheckAndSpend(token, SampleWillRun(), later), TokenVerdict::kExpired);
  auto other = Broker();
  EXPECT_EQ(other->CheckAndSpend(token, SampleWillRun(), later), TokenVerdict::kExpired);
}

TEST_F(SpentDirTest, AWorldWritableStateDirIsNotTrusted) {
  ASSERT_EQ(chmod(base_.c_str(), 0777), 0);
  SpentDir::Opened opened = SpentDir::Open(base_, {});
  EXPECT_EQ(opened.dir, nullptr);
  EXPECT_NE(opened.error.find("written by other users"), std::string::npos) << opened.error;
}

TEST_F(SpentDirTest, AGroupWritableRecordDirIsNotTrusted) {
  ASSERT_EQ(mkdir((base_ + "/spent-tokens").c_str(), 0770), 0);
  ASSERT_EQ(chmod((base_ + "/spent-tokens").c_str(), 0770), 0);
  SpentDir::Opened opened = SpentDir::Open(base_, {});
  EXPECT_EQ(opened.dir, nullptr);
}

TEST_F(SpentDirTest, ALinkInPlaceOfTheRecordDirIsRefused) {
  const std::string elsewhere = base_ + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), (base_ + "/spent-tokens").c_str()), 0);
  SpentDir::Opened opened = SpentDir::Open(base_, {});
  EXPECT_EQ(opened.dir, nullptr);
  EXPECT_NE(opened.error.find("not a link"), std::string::npos) << opened.error;
}

TEST_F(SpentDirTest, ADirectoryOwnedByAnotherUserIsNotTrusted) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIP: giving a directory to another user needs root";
  ASSERT_EQ(mkdir((base_ + "/theirs").c_str(), 0700), 0);
  ASSERT_EQ(chown((base_ + "/theirs").c_str(), 65534, 65534), 0);
  SpentDir::Opened opened = SpentDir::Open(base_ + "/theirs", {});
  EXPECT_EQ(opened.dir, nullptr);
  EXPECT_NE(opened.error.find("another user"), std::string::npos) << opened.error;
}

TEST_F(SpentDirTest, AWritableNonStickyAncestorIsNotTrusted) {
  const std::string open_dir = base_ + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(mkdir((open_dir + "/state").c_str(), 0700), 0);
  SpentDir::Opened opened = SpentDir::Open(open_dir + "/state", {});
  EXPECT_EQ(opened.dir, nullptr);
  EXPECT_NE(opened.error.find("not sticky"), std::string::npos) << opened.error;
  // Sticky, like /tmp: others cannot rename what we own in it, so it is accepted.
  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);
  EXPECT_NE(SpentDir::Open(open_dir + "/state", {}).dir, nullptr);
}

TEST_F(SpentDirTest, EnvironmentOrder) {
  const std::string a = base_ + "/a", b = base_ + "/skill-mcp", c = base_ + "/c";
  for (const auto& d : {a, b, c}) ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  auto env = [&](bool state_dir, bool systemd) {
    return [=](std::string_view n) -> std::optional<std::string> {
      if (n == "SKILL_MCP_STATE_DIR" && state_dir) return a;
      if (n == "STATE_DIRECTORY" && systemd) return b + ":/ignored";
      if (n == "XDG_RUNTIME_DIR") return c;
      return std::nullopt;
    };
  };
  EXPECT_EQ(OpenSpentDirFromEnv(env(true, true)).dir->path(), a + "/spent-tokens");
  EXPECT_EQ(OpenSpentDirFromEnv(env(false, true)).dir->path(), b + "/spent-tokens");
  EXPECT_EQ(OpenSpentDirFromEnv(env(false, false)).dir->path(), c + "/skill-mcp/spent-tokens");
  EXPECT_NE(SpentDir::Open("relative/path", {}).error.find("absolute"), std::string::npos);
}

// A full record refuses new spends; records other brokers prune are noticed, but a full
// record is rescanned at most every kFullPruneEverySeconds, not on every refused spend.
TEST_F(SpentDirTest, AFullRecordRefusesAndIsRescannedOnlyNowAndThen) {
  SpentDir::Opened opened = SpentDir::Open(base_, {});
  ASSERT_NE(opened.dir, nullptr) << opened.error;
  EXPECT_EQ(opened.dir->max_live(), kMaxSharedSpent);  // the cap in force outside tests
  opened.dir->set_max_live_for_test(kSmallCap);
  const std::string records = base_ + "/spent-tokens";
  // A full record of live records, named as brokers name them (hex nonce, then expiry).
  for (size_t i = 0; i < kSmallCap; ++i) {
    char name[80];
    snprintf(name, sizeof name, "%032zx-%lld", i, static_cast<long long>(kNow + kTtl));
    FILE* f = fopen((records + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
  }
  TokenNonce nonce{};
  nonce.fill(0xab);
  std::string error;
  EXPECT_EQ(opened.dir->Record(nonce, kNow + kTtl, kNow, &error), SpentDir::State::kFull);
  // Another broker prunes everything; within the throttle the count is not re-read ...
  for (const auto& e : fs::directory_iterator(records)) fs::remove(e.path());
  EXPECT_EQ(opened.dir->Record(nonce, kNow + kTtl, kNow + 1, &error), SpentDir::State::kFull);
  // ... after it, it is, and the spend is recorded.
  EXPECT_EQ(opened.dir->Record(nonce, kNow + kTtl, kNow + kFullPruneEverySeconds, &error),
            SpentDir::State::kUnspent)
      << error;
}

// A full host-wide record is not this client's doing (every broker on the host shares it):
// the refusal says so, names the record, keeps the wire code, and spends nothing.
TEST_F(SpentDirTest, AFullHostRecordIsReportedAsSuchNotAsTooManyRuns) {
  auto broker = Broker(kSmallCap);
  const std::string records = base_ + "/spent-tokens";
  for (size_t i = 0; i < kSmallCap; ++i) {
    char name[80];
    snprintf(name, sizeof name, "%032zx-%lld", i, static_cast<long long>(kNow + kTtl));
    FILE* f = fopen((records + "/" + name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
  }
  const std::string token = Issue(*broker);
  std::string detail;
  TokenVerdict v = broker->CheckAndSpend(token, SampleWillRun(), kNow, &detail);
  EXPECT_EQ(v, TokenVerdict::kSharedFull);
  EXPECT_EQ(detail, records);
  EXPECT_STREQ(TokenErrorCode(v), "TOKEN_EXPIRED");  // the wire's codes are unchanged
  const std::string note = RejectionPayload(v, detail)["note"].get<std::string>();
  EXPECT_NE(note.find("host-wide"), std::string::npos) << note;
  EXPECT_NE(note.find(records), std::string::npos) << note;
  EXPECT_EQ(note.find("Too many runs"), std::string::npos) << note;
  EXPECT_EQ(broker->SpentCount(), 0u);
  EXPECT_EQ(broker->Check(token, SampleWillRun(), kNow), TokenVerdict::kValid);
}

}  // namespace
}  // namespace skillmcp
