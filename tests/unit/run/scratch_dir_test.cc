// The run's scratch directory (broker/run/scratch_dir.h): made 0700 for the run's ids,
// removed with whatever a hostile script left in it, never following a link out; and
// the Landlock inputs the launch configuration derives (module and node directories).
#include "broker/run/scratch_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "broker/run/launch_config.h"
#include "tests/unit/run/suid_dumpable.h"

namespace skillmcp {
namespace {

class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-scratch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    chmod(base_.c_str(), 01777);  // like /tmp: the run's uid may make its directory here
    outside_ = base_ + "-outside";
    std::filesystem::create_directories(outside_ + "/keep");
    std::ofstream(outside_ + "/keep/file") << "must survive";
  }
  void TearDown() override {
    std::filesystem::remove_all(base_);
    std::filesystem::remove_all(outside_);
  }
  // What a hostile script leaves: links out (to a file and to a directory), odd names,
  // an unreadable directory, a read-only directory, a tree deeper than one pass.
  static void Litter(const std::string& dir, const std::string& outside) {
    namespace fs = std::filesystem;
    (void)!symlink((outside + "/keep/file").c_str(), (dir + "/link-to-file").c_str());
    (void)!symlink((outside + "/keep").c_str(), (dir + "/link-to-dir").c_str());
    std::ofstream(dir + "/new\nline") << "x";
    std::ofstream(dir + "/-rf") << "x";
    std::ofstream(dir + "/ ..") << "x";
    fs::create_directories(dir + "/locked/inner");
    std::ofstream(dir + "/locked/inner/f") << "x";
    chmod((dir + "/locked/inner").c_str(), 0);
    chmod((dir + "/locked").c_str(), 0);
    fs::create_directories(dir + "/ro");
    std::ofstream(dir + "/ro/f") << "x";
    chmod((dir + "/ro").c_str(), 0500);
    std::string deep = dir;
    for (int i = 0; i < 3 * kMaxRemoveDepth + 5; ++i) {
      deep += "/d";
      mkdir(deep.c_str(), 0700);
    }
    (void)!symlink((outside + "/keep").c_str(), (deep + "/escape").c_str());
    std::ofstream(deep + "/bottom") << "x";
  }
  std::string base_, outside_;
};

TEST_F(ScratchTest, MadePrivateAndRemovedWithEverythingInIt) {
  auto s = ScratchDir::Create(base_, false, 0, 0);
  ASSERT_TRUE(s) << strerror(errno);
  struct stat st {};
  ASSERT_EQ(lstat(s->path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(s->path().rfind(base_ + "/skill-mcp-run.", 0), 0u) << s->path();
  Litter(s->path(), outside_);
  const std::string path = s->path();
  EXPECT_TRUE(s->Remove());
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "gone after the run";
  std::ifstream keep(outside_ + "/keep/file");
  std::string text((std::istreambuf_iterator<char>(keep)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "must survive") << "no link was followed";
}

TEST_F(ScratchTest, TheDestructorRemovesIt) {
  std::string path;
  {
    auto s = ScratchDir::Create(base_, false, 0, 0);
    ASSERT_TRUE(s);
    path = s->path();
    std::ofstream(path + "/f") << "x";
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

// The refusal names the cause: a failed Create leaves errno as its failing call set it
// (the cleanup of what was never made must not overwrite it).
TEST_F(ScratchTest, AFailureKeepsItsCause) {
  errno = 0;
  EXPECT_FALSE(ScratchDir::Create(base_ + "/no-such-base", false, 0, 0));
  EXPECT_EQ(errno, ENOENT) << strerror(errno);
  const std::string file = base_ + "/a-file";
  std::ofstream(file) << "x";
  errno = 0;
  EXPECT_FALSE(ScratchDir::Create(file, false, 0, 0));
  EXPECT_EQ(errno, ENOTDIR) << strerror(errno);
}

TEST_F(ScratchTest, ADirectorySwappedInUnderItsNameIsNotRemoved) {
  auto s = ScratchDir::Create(base_, false, 0, 0);
  ASSERT_TRUE(s);
  const std::string path = s->path();
  ASSERT_EQ(rename(path.c_str(), (base_ + "/moved").c_str()), 0);
  ASSERT_EQ(symlink(outside_.c_str(), path.c_str()), 0);
  s->Remove();
  EXPECT_EQ(access((outside_ + "/keep/file").c_str(), F_OK), 0);
  EXPECT_EQ(access((base_ + "/moved").c_str(), F_OK), 0) << "emptied beneath its descriptor";
}

// The kernel resets a process's dumpable flag to fs.suid_dumpable whenever its filesystem
// ids change: making and removing a run's directory must leave the broker not dumpable
// even where that sysctl would make it dumpable (1 here; 2 behaves the same). The
// sysctl is host-wide, so it is set only for the moment of the check, in a child.
TEST_F(ScratchTest, SwitchingIdsLeavesTheBrokerNotDumpable) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root (CAP_SETUID for setfsuid, and to set fs.suid_dumpable)";
  SuidDumpableOne one;
  if (!one.set()) GTEST_SKIP() << "fs.suid_dumpable cannot be set here (a read-only /proc/sys)";
  const pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) _exit(2);
    auto s = ScratchDir::Create(base_, true, 64000, 64001);
    if (!s) _exit(3);
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) _exit(4);  // after the make
    if (!s->Remove()) _exit(5);
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) _exit(6);  // after the removal
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(one.PutBack()) << "fs.suid_dumpable could not be put back to " << one.before();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "4 or 6: the broker became dumpable";
}

// As root with a uid switch: the directory belongs to the run's uid and gid, and the
// broker removes what that uid left, with only its filesystem ids switched.
TEST_F(ScratchTest, OwnedByTheRunsIdsWhenTheBrokerSwitches) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SETUID for setfsuid)";
  const pid_t pid = fork();
  if (pid == 0) {
    // A broker that left root but kept CAP_SETUID/CAP_SETGID is modelled by root: the
    // point is the ownership and the removal as another uid.
    auto s = ScratchDir::Create(base_, true, 64000, 64001);
    if (!s) _exit(2);
    struct stat st {};
    if (lstat(s->path().c_str(), &st) != 0 || st.st_uid != 64000 || st.st_gid != 64001 ||
        (st.st_mode & 07777) != 0700)
      _exit(3);
    if (getuid() != 0 || setfsuid(static_cast<uid_t>(-1)) != 0) _exit(4);  // restored
    // Litter as the run's uid, in a child that became it.
    const pid_t run = fork();
    if (run == 0) {
      if (setresgid(64001, 64001, 64001) != 0 || setresuid(64000, 64000, 64000) != 0) _exit(1);
      Litter(s->path(), outside_);
      _exit(0);
    }
    int status = 0;
    waitpid(run, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(5);
    const std::string path = s->path();
    if (!s->Remove()) _exit(6);
    if (access(path.c_str(), F_OK) == 0) _exit(7);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(access((outside_ + "/keep/file").c_str(), F_OK), 0);
}

TEST(LandlockInputs, InterpreterInstallDir) {
  EXPECT_EQ(InterpreterInstallDir("/usr/bin/node"), "/usr");
  EXPECT_EQ(InterpreterInstallDir("/opt/node-v20/bin/node"), "/opt/node-v20");
  EXPECT_EQ(InterpreterInstallDir("/opt/node/node"), "/opt/node");
  EXPECT_EQ(InterpreterInstallDir("/opt/py/bin/python3.12"), "/opt/py");
  EXPECT_EQ(InterpreterInstallDir("/node"), "/");
}

}  // namespace
}  // namespace skillmcp
