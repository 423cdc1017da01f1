#include "broker/harden/credentials.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-cred-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << content;
  }
  std::string dir_;
};

TEST_F(CredentialsTest, EachValidFileBecomesAVariable) {
  Write("WEATHER_API_KEY", "k-123\n");
  Write("TWO_NEWLINES", "a\n\n");
  Write("NO_NEWLINE", "plain");
  Write("EXACT", std::string(kCredentialMaxBytes, 'x'));
  EnvStore store;
  store.Set("WEATHER_API_KEY", "from-environment");
  CredentialsResult r = LoadCredentials(dir_, store);
  EXPECT_TRUE(r.used);
  EXPECT_TRUE(r.refused.empty());
  EXPECT_EQ(r.loaded,
            (std::vector<std::string>{"EXACT", "NO_NEWLINE", "TWO_NEWLINES", "WEATHER_API_KEY"}));
  EXPECT_EQ(store.GetConfig("WEATHER_API_KEY"), "k-123");  // the credential wins
  EXPECT_EQ(store.GetConfig("TWO_NEWLINES"), "a\n");       // only one newline stripped
  EXPECT_EQ(store.GetConfig("NO_NEWLINE"), "plain");
  EXPECT_EQ(store.GetConfig("EXACT")->size(), kCredentialMaxBytes);
}

TEST_F(CredentialsTest, RefusesOversizedBadNamesAndNonRegularFiles) {
  Write("GOOD", "ok");
  Write("BIG", std::string(kCredentialMaxBytes + 1, 'x'));
  Write("bad-name", "v");
  Write("9STARTS_WITH_DIGIT", "v");
  ASSERT_EQ(symlink((dir_ + "/GOOD").c_str(), (dir_ + "/LINK").c_str()), 0);
  ASSERT_EQ(mkdir((dir_ + "/SUBDIR").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((dir_ + "/FIFO").c_str(), 0600), 0);  // must not hang the load
  EnvStore store;
  CredentialsResult r = LoadCredentials(dir_, store);
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"GOOD"}));
  ASSERT_EQ(r.refused.size(), 6u);
  EXPECT_FALSE(store.IsSet("BIG"));
  EXPECT_FALSE(store.IsSet("LINK"));
  EXPECT_FALSE(store.IsSet("FIFO"));
  EXPECT_FALSE(store.IsSet("SUBDIR"));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"GOOD"}));
  std::string all;
  for (auto& s : r.refused) all += s + "\n";
  EXPECT_NE(all.find("BIG: larger than"), std::string::npos) << all;
  EXPECT_NE(all.find("bad-name: not a valid variable name"), std::string::npos) << all;
  EXPECT_NE(all.find("FIFO: not a regular file"), std::string::npos) << all;
}

TEST_F(CredentialsTest, MissingDirectoryIsReportedNotFatal) {
  EnvStore store;
  CredentialsResult r = LoadCredentials(dir_ + "/nope", store);
  EXPECT_FALSE(r.used);
  EXPECT_NE(r.detail.find("cannot open"), std::string::npos);
  EXPECT_FALSE(LoadCredentials("", store).used);
}

TEST(IsEnvName, Rules) {
  EXPECT_TRUE(IsEnvName("A"));
  EXPECT_TRUE(IsEnvName("_x9"));
  EXPECT_FALSE(IsEnvName(""));
  EXPECT_FALSE(IsEnvName("9A"));
  EXPECT_FALSE(IsEnvName("A-B"));
  EXPECT_FALSE(IsEnvName("A.B"));
  EXPECT_FALSE(IsEnvName("A B"));
}

}  // namespace
}  // namespace skillmcp
