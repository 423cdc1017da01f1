#include "shared/open_beneath.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <string>

namespace skillmcp {
namespace {

class OpenBeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-ob-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ASSERT_EQ(mkdir((root_ + "/skill").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((root_ + "/skill/sub").c_str(), 0755), 0);
    Write(root_ + "/skill/sub/file.txt", "inside");
    Write(root_ + "/secret.txt", "secret");
    dir_ = UniqueFd(open((root_ + "/skill").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir_.valid());
  }
  void TearDown() override { std::error_code ec; std::filesystem::remove_all(root_, ec); }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  std::string ReadAll(int fd) {
    char buf[64];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  std::string root_;
  UniqueFd dir_;
};

TEST_F(OpenBeneathTest, OpensAFileInside) {
  UniqueFd fd = OpenRegularBeneath(dir_.get(), "sub/file.txt");
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(ReadAll(fd.get()), "inside");
}

TEST_F(OpenBeneathTest, FollowsASymlinkThatStaysInside) {
  ASSERT_EQ(symlink("sub/file.txt", (root_ + "/skill/link.txt").c_str()), 0);
  UniqueFd fd = OpenRegularBeneath(dir_.get(), "link.txt");
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(ReadAll(fd.get()), "inside");
}

TEST_F(OpenBeneathTest, OpensPathOnlyDescriptors) {
  UniqueFd fd = OpenBeneath(dir_.get(), "sub", O_PATH | O_DIRECTORY);
  EXPECT_TRUE(fd.valid()) << strerror(errno);
}

TEST_F(OpenBeneathTest, RefusesASymlinkLeadingOut) {
  ASSERT_EQ(symlink("../secret.txt", (root_ + "/skill/out.txt").c_str()), 0);
  errno = 0;
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "out.txt").valid());
  EXPECT_EQ(errno, EXDEV);
}

TEST_F(OpenBeneathTest, RefusesAnAbsoluteSymlink) {
  ASSERT_EQ(symlink((root_ + "/secret.txt").c_str(), (root_ + "/skill/abs.txt").c_str()), 0);
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "abs.txt").valid());
}

TEST_F(OpenBeneathTest, RefusesDotDotEvenWithoutTheStringCheck) {
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "../secret.txt").valid());
}

TEST_F(OpenBeneathTest, RefusesMagicLinks) {
  ASSERT_EQ(symlink("/proc/self/root/etc/passwd", (root_ + "/skill/magic").c_str()), 0);
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "magic").valid());
}

TEST_F(OpenBeneathTest, RefusesAFifoWithoutHanging) {
  ASSERT_EQ(mkfifo((root_ + "/skill/pipe").c_str(), 0644), 0);
  errno = 0;
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "pipe").valid());
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(OpenBeneathTest, RefusesADirectory) {
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "sub").valid());
}

TEST_F(OpenBeneathTest, SwapAfterCheckDoesNotServeTheTarget) {
  // The descriptor opened before the swap keeps pointing at the checked file.
  UniqueFd fd = OpenRegularBeneath(dir_.get(), "sub/file.txt");
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(unlink((root_ + "/skill/sub/file.txt").c_str()), 0);
  ASSERT_EQ(symlink((root_ + "/secret.txt").c_str(), (root_ + "/skill/sub/file.txt").c_str()), 0);
  EXPECT_EQ(ReadAll(fd.get()), "inside");
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "sub/file.txt").valid());
}

}  // namespace
}  // namespace skillmcp
