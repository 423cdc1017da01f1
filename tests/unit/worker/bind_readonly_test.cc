// The read-only binds of the run's view (worker/bind_readonly.h). Where mount_setattr is
// missing or filtered (a seccomp filter here answers EPERM, as a container's profile
// may), a bind with a mount beneath it fails closed rather than dropping that mount (a
// cover over another skills root) from the view; one without is remounted read-only.
// Each case runs in a forked child in its own user and mount namespace.
#include "worker/bind_readonly.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace skillmcp::worker {
namespace {

constexpr int kNoNamespace = 125;
constexpr int kStillWritable = 124;
constexpr int kSetup = 123;

bool WriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Root of a new user namespace (mapped to the caller) with a private mount namespace.
bool EnterNamespaces() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  return WriteFile("/proc/self/setgroups", "deny") &&
         WriteFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
         WriteFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1") &&
         mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

bool DenyMountSetattr() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return false;
  const bool ok = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount_setattr), 0) == 0 &&
                  seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

// In a child: <base>/skill (with a tmpfs at skill/inner when `submount`) bound
// recursively at <base>/view, then MakeBindReadOnly (mount_setattr denied when `filter`).
// 0 when it succeeded and neither the view nor its inner directory takes a write; its
// errno when it failed; kStillWritable, kSetup or kNoNamespace otherwise.
int BindInChild(const std::string& base, bool submount, bool filter) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!EnterNamespaces()) _exit(kNoNamespace);
    const std::string skill = base + "/skill", view = base + "/view";
    if (mount("tmpfs", base.c_str(), "tmpfs", 0, "size=64k") != 0 ||
        mkdir(skill.c_str(), 0755) != 0 || mkdir((skill + "/inner").c_str(), 0755) != 0 ||
        mkdir(view.c_str(), 0755) != 0)
      _exit(kSetup);
    if (submount && mount("tmpfs", (skill + "/inner").c_str(), "tmpfs", 0, "size=64k") != 0)
      _exit(kSetup);
    const int fd = open(skill.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || mount(("/proc/self/fd/" + std::to_string(fd)).c_str(), view.c_str(), nullptr,
                        MS_BIND | MS_REC, nullptr) != 0)
      _exit(kSetup);
    if (filter && !DenyMountSetattr()) _exit(kSetup);
    if (int e = MakeBindReadOnly(view, fd); e != 0) _exit(e > 0 && e < kSetup ? e : kSetup);
    for (const std::string& f : {view + "/file", view + "/inner/file"}) {
      const int w = open(f.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (w >= 0 || errno != EROFS) _exit(kStillWritable);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

struct Base {
  std::string path;
  Base() {
    char tmpl[] = "/tmp/bind-readonly-test.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Base() { rmdir(path.c_str()); }
};

TEST(MakeBindReadOnly, WithoutMountSetattrAMountBeneathFailsTheView) {
  Base b;
  const int got = BindInChild(b.path, /*submount=*/true, /*filter=*/true);
  if (got == kNoNamespace) GTEST_SKIP() << "this host refuses a user namespace to this user";
  EXPECT_EQ(got, EPERM) << "the fallback must not drop the mount beneath the bind";
}

TEST(MakeBindReadOnly, WithoutMountSetattrALoneBindIsRemountedReadOnly) {
  Base b;
  const int got = BindInChild(b.path, /*submount=*/false, /*filter=*/true);
  if (got == kNoNamespace) GTEST_SKIP() << "this host refuses a user namespace to this user";
  EXPECT_EQ(got, 0);
}

TEST(MakeBindReadOnly, WithMountSetattrEveryMountBeneathIsReadOnly) {
  Base b;
  const int got = BindInChild(b.path, /*submount=*/true, /*filter=*/false);
  if (got == kNoNamespace) GTEST_SKIP() << "this host refuses a user namespace to this user";
  if (got == ENOSYS || got == EPERM) GTEST_SKIP() << "mount_setattr is refused here";
  EXPECT_EQ(got, 0);
}

TEST(HasMountBeneath, OnlyStrictlyBeneathWithEscapesDecoded) {
  const std::string info =
      "21 1 0:20 / / rw shared:1 - ext4 /dev/sda1 rw\n"
      "30 21 0:30 / /srv/skills\\040a rw - tmpfs tmpfs rw\n"
      "31 30 0:31 / /srv/skills\\040a/x/inner rw - tmpfs tmpfs rw\n";
  bool ok = false;
  EXPECT_TRUE(HasMountBeneath(info, "/srv/skills a/x", &ok));
  EXPECT_TRUE(ok);
  EXPECT_FALSE(HasMountBeneath(info, "/srv/skills a/x/inner", &ok));
  EXPECT_TRUE(ok);
  EXPECT_FALSE(HasMountBeneath(info, "/srv/skills", &ok));  // "/srv/skills a" is beside it
  EXPECT_TRUE(ok);
  EXPECT_TRUE(HasMountBeneath(info, "/srv", &ok));
  EXPECT_FALSE(HasMountBeneath("30 21 0:30 / /a\\04 rw\n", "/b", &ok));
  EXPECT_FALSE(ok);
  EXPECT_FALSE(HasMountBeneath("30 21 0:30\n", "/b", &ok));
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace skillmcp::worker
