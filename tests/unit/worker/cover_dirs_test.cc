// The view's covers of the operator's directories (worker/namespaces.h, CoverDirs): a
// path the caller cannot reach (a non-directory on the way, a symlink loop, a directory it
// may not search) is skipped like an absent one, so the boot probe does not fail for it
// and namespaces do not silently turn off; a real directory is still covered. Each case
// runs in a forked child in its own user and mount namespace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "worker/namespaces.h"

namespace skillmcp::worker {
namespace {

struct CoverTree {
  std::string root;
  CoverTree() {
    char tmpl[] = "/tmp/cover-dirs-test.XXXXXX";
    root = mkdtemp(tmpl);
  }
  ~CoverTree() {
    chmod((root + "/locked").c_str(), 0755);
    (void)!std::system(("rm -rf '" + root + "'").c_str());
  }
};

// 0 when CoverDirs(dirs) succeeded and `secret` was hidden; 125 when the namespace
// could not be made; else the errno of the failed step, or 124 if `secret` stayed visible.
int CoverInChild(const std::vector<std::string>& dirs, const std::string& secret) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Unmapped: the caller's own files read as the overflow id, so no capability of the
    // new namespace overrides their modes (the locked directory stays unsearchable).
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(125);
    if (StepResult r = CoverDirs(dirs)) _exit(r->err > 0 && r->err < 124 ? r->err : 123);
    _exit(access(secret.c_str(), F_OK) == 0 ? 124 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

TEST(CoverDirs, AnUnreachablePathIsSkippedAndARealDirectoryCovered) {
  CoverTree t;
  const std::string real = t.root + "/real";
  ASSERT_EQ(mkdir(real.c_str(), 0755), 0);
  const std::string secret = real + "/skill-mcp.env";
  close(open(secret.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  close(open((t.root + "/file").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_EQ(symlink("loop", (t.root + "/loop").c_str()), 0);
  ASSERT_EQ(mkdir((t.root + "/locked").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((t.root + "/locked/skill-mcp").c_str(), 0755), 0);
  ASSERT_EQ(chmod((t.root + "/locked").c_str(), 0), 0);
  const std::vector<std::string> unreachable = {
      t.root + "/absent/skill-mcp",  // ENOENT
      t.root + "/file/skill-mcp",    // ENOTDIR
      t.root + "/loop/skill-mcp",    // ELOOP
      t.root + "/locked/skill-mcp",  // EACCES
  };
  std::vector<std::string> dirs = unreachable;
  dirs.push_back(real);
  const int got = CoverInChild(dirs, secret);
  if (got == 125) GTEST_SKIP() << "this host refuses a user namespace to this user";
  EXPECT_EQ(got, 0) << "each unreachable path skipped, the real one covered: " << strerror(got);
  for (const std::string& one : unreachable)
    EXPECT_EQ(CoverInChild({one}, "/"), 124) << one << ": skipped, nothing failed";
}

}  // namespace
}  // namespace skillmcp::worker
