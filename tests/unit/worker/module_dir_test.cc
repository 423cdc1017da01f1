// Opening a node_modules directory (worker/module_dir.h), on both of its paths: openat2
// where the kernel has it, and the component walk where openat2 is refused (a child
// with a seccomp filter answering ENOSYS for openat2, as old kernels and container
// profiles do).
#include "worker/module_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "tests/unit/worker/test_util.h"

namespace skillmcp::worker {
namespace {

using skillmcp::testing::CheckedModuleDir;

// errno of OpenModuleDir(dir) in a child (0: opened); `no_openat2` makes openat2 ENOSYS.
int OpenErrInChild(const ModuleDir& dir, bool no_openat2) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (no_openat2) {
      sock_filter code[] = {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      };
      sock_fprog prog{sizeof code / sizeof code[0], code};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        _exit(255);
      // The filter is in force: openat2 now answers ENOSYS.
      if (syscall(SYS_openat2, AT_FDCWD, "/", nullptr, 0) != -1 || errno != ENOSYS) _exit(254);
    }
    UniqueFd fd = OpenModuleDir(dir);
    _exit(fd.valid() ? 0 : errno);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 253;
}

int OpenErrInChild(const std::string& path, bool no_openat2) {
  return OpenErrInChild(CheckedModuleDir(path), no_openat2);
}

class ModuleDirTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/module-dir-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    ASSERT_EQ(mkdir((base_ + "/real").c_str(), 0755), 0);
    ASSERT_EQ(mkdir((base_ + "/real/node_modules").c_str(), 0755), 0);
    ASSERT_EQ(symlink("/", (base_ + "/real/linked").c_str()), 0);
    ASSERT_EQ(symlink(base_.c_str(), (base_ + "/via").c_str()), 0);
    ASSERT_EQ(mkdir((base_ + "/open").c_str(), 0755), 0);
    ASSERT_EQ(chmod((base_ + "/open").c_str(), 0775), 0);
  }
  void TearDown() override { (void)!std::system(("rm -rf '" + base_ + "'").c_str()); }
  std::string base_;
};

TEST_P(ModuleDirTest, NoSymlinkOnAnyComponentNorADirectoryOthersMayWrite) {
  const bool no_openat2 = GetParam();
  EXPECT_EQ(OpenErrInChild(base_ + "/real/node_modules", no_openat2), 0) << "control";
  const int linked = OpenErrInChild(base_ + "/real/linked", no_openat2);
  EXPECT_TRUE(linked == ELOOP || linked == ENOTDIR) << "a linked last component: " << linked;
  const int via = OpenErrInChild(base_ + "/via/real/node_modules", no_openat2);
  EXPECT_TRUE(via == ELOOP || via == ENOTDIR) << "a linked parent: " << via;
  EXPECT_EQ(OpenErrInChild(base_ + "/open", no_openat2), EPERM) << "group-writable";
  EXPECT_EQ(OpenErrInChild(base_ + "/absent", no_openat2), ENOENT);
  for (int err : {ELOOP, ENOTDIR, EPERM, ENOENT, EACCES, ESTALE})
    EXPECT_TRUE(IsSkippedModuleDirError(err));
  EXPECT_FALSE(IsSkippedModuleDirError(EMFILE)) << "anything else fails the step";
}

// The broker checked the directory at a path; another directory renamed into its place
// afterwards (same path, same mode, another inode) is not opened.
TEST_P(ModuleDirTest, ADirectorySwappedInSinceTheBrokersCheckIsRefused) {
  const bool no_openat2 = GetParam();
  const std::string path = base_ + "/real/node_modules";
  const ModuleDir checked = CheckedModuleDir(path);
  EXPECT_EQ(OpenErrInChild(checked, no_openat2), 0) << "control: the checked directory";
  ASSERT_EQ(mkdir((base_ + "/swapped").c_str(), 0755), 0);
  ASSERT_EQ(rename(path.c_str(), (base_ + "/kept").c_str()), 0);
  ASSERT_EQ(rename((base_ + "/swapped").c_str(), path.c_str()), 0);
  EXPECT_EQ(OpenErrInChild(checked, no_openat2), ESTALE);
  ModuleDir other_device = checked;
  other_device.dev ^= 1;  // the same inode number on another filesystem
  ASSERT_EQ(rename(path.c_str(), (base_ + "/swapped").c_str()), 0);
  ASSERT_EQ(rename((base_ + "/kept").c_str(), path.c_str()), 0);
  EXPECT_EQ(OpenErrInChild(other_device, no_openat2), ESTALE);
  EXPECT_EQ(OpenErrInChild(checked, no_openat2), 0) << "the checked directory is back";
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, ModuleDirTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Walk") : std::string("Openat2");
                         });

}  // namespace
}  // namespace skillmcp::worker
