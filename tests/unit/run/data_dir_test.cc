// The MCP_DATA_DIR path the broker sends the worker (broker/run/data_dir.h): a normalised
// path the broker's user cannot resolve goes as it is; otherwise the real path is sent.
#include "broker/run/data_dir.h"

#include <gtest/gtest.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace skillmcp {
namespace {

class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-datadir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    std::filesystem::create_directories(base_ + "/locked/data");
    std::filesystem::create_directories(base_ + "/open/data");
  }
  void TearDown() override {
    chmod((base_ + "/locked").c_str(), 0700);
    std::filesystem::remove_all(base_);
  }
  std::string base_;
};

// The path a child whose filesystem uid cannot search `locked` gets for `value`; as root
// the child takes an unprivileged fsuid (which clears its DAC override capabilities).
std::string ResultWithoutSearch(const std::string& locked, const std::string& value) {
  int p[2];
  if (pipe(p) != 0) return "<pipe>";
  chmod(locked.c_str(), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (geteuid() == 0) setfsuid(65534);
    std::string r = DataDirRulePath(value);
    (void)!write(p[1], r.data(), r.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  chmod(locked.c_str(), 0700);
  return out;
}

TEST_F(DataDirTest, NormalisedPathUnderUnsearchableParentGoesAsItIs) {
  std::string data = base_ + "/locked/data";
  EXPECT_EQ(ResultWithoutSearch(base_ + "/locked", data), data);
}

TEST_F(DataDirTest, UnnormalisedPathIsResolved) {
  EXPECT_EQ(DataDirRulePath(base_ + "/open//data/"), base_ + "/open/data");
  EXPECT_EQ(DataDirRulePath(base_ + "/locked/../open/data"), base_ + "/open/data");
}

// why resolved first: the worker opens named rules without following symlinks.
TEST_F(DataDirTest, ALinkIsResolved) {
  ASSERT_EQ(symlink("open/data", (base_ + "/link").c_str()), 0);
  EXPECT_EQ(DataDirRulePath(base_ + "/link"), base_ + "/open/data");
}

TEST_F(DataDirTest, UnresolvableUnnormalisedPathGetsNoRule) {
  EXPECT_EQ(ResultWithoutSearch(base_ + "/locked", base_ + "/locked/data/"), "");
  EXPECT_EQ(DataDirRulePath(base_ + "/missing/../x/"), "");
}

TEST_F(DataDirTest, RelativeOrEmptyGetsNoRule) {
  EXPECT_EQ(DataDirRulePath(""), "");
  EXPECT_EQ(DataDirRulePath("data"), "");
  EXPECT_EQ(DataDirRulePath("./srv/data"), "");
}

}  // namespace
}  // namespace skillmcp
