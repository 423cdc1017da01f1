#include "shared/open_beneath.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

// Built twice more with SKILL_MCP_TEST_OPENAT2_ERRNO set (ENOSYS, EPERM): a seccomp
// filter then answers openat2 with that errno for the whole test program, so every case
// below runs on the fallback walk, as on an old kernel or under an old container profile.
#ifdef SKILL_MCP_TEST_OPENAT2_ERRNO
#include <seccomp.h>
#include <sys/prctl.h>
#endif

namespace skillmcp {
namespace {

#ifdef SKILL_MCP_TEST_OPENAT2_ERRNO
constexpr bool kFallback = true;
class NoOpenat2 : public ::testing::Environment {
 public:
  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(SKILL_MCP_TEST_OPENAT2_ERRNO),
                               SCMP_SYS(openat2), 0),
              0);
    ASSERT_EQ(seccomp_load(ctx), 0);
    seccomp_release(ctx);
  }
};
const ::testing::Environment* const kNoOpenat2 =
    ::testing::AddGlobalTestEnvironment(new NoOpenat2);
#else
constexpr bool kFallback = false;
#endif

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

// Which path this program exercises: openat2 itself, or the walk because it is missing.
TEST_F(OpenBeneathTest, RunsOnTheIntendedPath) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH;
  errno = 0;
  long fd = syscall(SYS_openat2, dir_.get(), "sub", &how, sizeof how);
  if (fd >= 0) close(static_cast<int>(fd));
#ifdef SKILL_MCP_TEST_OPENAT2_ERRNO
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, SKILL_MCP_TEST_OPENAT2_ERRNO);
#else
  EXPECT_GE(fd, 0) << "openat2 is unavailable here: " << strerror(errno);
#endif
}

TEST_F(OpenBeneathTest, FollowsASymlinkThatStaysInside) {
  ASSERT_EQ(symlink("sub/file.txt", (root_ + "/skill/link.txt").c_str()), 0);
  errno = 0;
  UniqueFd fd = OpenRegularBeneath(dir_.get(), "link.txt");
  if (kFallback) {  // the walk follows no symlink at all
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(errno, ELOOP);
    return;
  }
  ASSERT_TRUE(fd.valid());
  EXPECT_EQ(ReadAll(fd.get()), "inside");
}

TEST_F(OpenBeneathTest, RefusesASymlinkedDirectoryOnTheWay) {
  ASSERT_EQ(symlink("..", (root_ + "/skill/up").c_str()), 0);
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "up/secret.txt").valid());
}

TEST_F(OpenBeneathTest, RefusesEmptyAndDotComponents) {
  for (const char* rel : {"sub//file.txt", "./sub/file.txt", "sub/./file.txt", "/etc/passwd"}) {
    UniqueFd fd = OpenRegularBeneath(dir_.get(), rel);
    if (kFallback) {
      EXPECT_FALSE(fd.valid()) << rel;
      EXPECT_EQ(errno, EXDEV) << rel;
    } else if (std::string(rel) == "/etc/passwd") {
      EXPECT_FALSE(fd.valid()) << rel;  // openat2 refuses absolute paths beneath
    }
  }
}

TEST_F(OpenBeneathTest, OpensPathOnlyDescriptors) {
  UniqueFd fd = OpenBeneath(dir_.get(), "sub", O_PATH | O_DIRECTORY);
  EXPECT_TRUE(fd.valid()) << strerror(errno);
}

TEST_F(OpenBeneathTest, RefusesASymlinkLeadingOut) {
  ASSERT_EQ(symlink("../secret.txt", (root_ + "/skill/out.txt").c_str()), 0);
  errno = 0;
  EXPECT_FALSE(OpenRegularBeneath(dir_.get(), "out.txt").valid());
  EXPECT_EQ(errno, kFallback ? ELOOP : EXDEV);
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

// The kernel answers EAGAIN to a RESOLVE_BENEATH lookup through ".." that any rename on
// the host raced. The bare syscall is the control: where it never races here the case is
// skipped, since the retry could not be told from luck.
TEST_F(OpenBeneathTest, ALinkThroughDotDotSurvivesRenamesElsewhere) {
  if (kFallback) GTEST_SKIP() << "the fallback walk follows no symlink and meets no \"..\"";
  ASSERT_EQ(mkdir((root_ + "/skill/docs").c_str(), 0755), 0);
  ASSERT_EQ(symlink("../sub/file.txt", (root_ + "/skill/docs/inner.txt").c_str()), 0);
  Write(root_ + "/r1", "");
  std::atomic<bool> stop{false};
  std::thread renamer([&] {
    const std::string a = root_ + "/r1", b = root_ + "/r2";
    while (!stop.load()) {
      std::rename(a.c_str(), b.c_str());
      std::rename(b.c_str(), a.c_str());
    }
  });
  int raced = 0, failed = 0;
  for (int i = 0; i < 40000 && failed == 0; ++i) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long raw = syscall(SYS_openat2, dir_.get(), "docs/inner.txt", &how, sizeof how);
    if (raw >= 0) close(static_cast<int>(raw));
    else if (errno == EAGAIN) ++raced;
    if (!OpenRegularBeneath(dir_.get(), "docs/inner.txt").valid()) ++failed;
  }
  stop = true;
  renamer.join();
  EXPECT_EQ(failed, 0) << "the bare syscall raced " << raced << " times";
  if (raced == 0) GTEST_SKIP() << "no rename raced a lookup on this machine; nothing shown";
}

}  // namespace
}  // namespace skillmcp
