// The host-wide default state directory of a root-started broker (broker/harden/state_dir.h,
// docs/isolation.md "Own identity per run"): which directory wins, and what
// PrepareHostStateDir makes, accepts and refuses. The filesystem cases run as root in a
// child chrooted into a private tmpfs that holds its own /var/lib, so the host's
// /var/lib/skill-mcp is never touched.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include "broker/harden/state_dir.h"
#include "tests/unit/harden/child.h"

namespace skillmcp {
namespace {

using testing::InChild;

using Vars = std::map<std::string, std::string, std::less<>>;

StateGetFn Getter(const Vars& vars) {
  return [&vars](std::string_view n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ResolveStateBase, TheRootDefaultComesAfterTheVariablesAndBeforeTheRuntimeDir) {
  Vars vars = {
      {"SKILL_MCP_STATE_DIR", "/a"}, {"STATE_DIRECTORY", "/b/skill-mcp"}, {"XDG_RUNTIME_DIR", "/run/user/0"}};
  HostStateDefault host{true, kHostStateDir, ""};
  EXPECT_EQ(ResolveStateBase(Getter(vars), host).base, "/a");
  EXPECT_FALSE(NeedsHostStateDefault(Getter(vars)));
  vars.erase("SKILL_MCP_STATE_DIR");
  EXPECT_EQ(ResolveStateBase(Getter(vars), host).base, "/b/skill-mcp");
  EXPECT_FALSE(NeedsHostStateDefault(Getter(vars)));
  // Another service's $STATE_DIRECTORY, inherited: the root default still applies.
  vars["STATE_DIRECTORY"] = "/var/lib/other-service";
  EXPECT_TRUE(NeedsHostStateDefault(Getter(vars)));
  EXPECT_EQ(ResolveStateBase(Getter(vars), host).base, "/var/lib/skill-mcp");
  vars.erase("STATE_DIRECTORY");
  EXPECT_TRUE(NeedsHostStateDefault(Getter(vars)));
  StateBase root = ResolveStateBase(Getter(vars), host);
  EXPECT_EQ(root.base, "/var/lib/skill-mcp");
  EXPECT_TRUE(root.subdirs.empty());
  // Not started as root (the default applies only then): unchanged, the runtime dir.
  EXPECT_EQ(ResolveStateBase(Getter(vars), HostStateDefault{}).base, "/run/user/0");
}

TEST(ResolveStateBase, ARefusedRootDefaultLeavesNoStateDirAndSaysWhy) {
  Vars vars = {{"XDG_RUNTIME_DIR", "/run/user/0"}};
  HostStateDefault refused{true, "", "the host-wide state directory is refused: because"};
  StateBase b = ResolveStateBase(Getter(vars), refused);
  // Fail closed: never the per-login directory instead of the host's.
  EXPECT_TRUE(b.base.empty());
  OpenedStateDir open = OpenStateDirFromEnv(Getter(vars), {"run-uids"}, refused);
  EXPECT_FALSE(open.fd);
  EXPECT_EQ(open.error, refused.error);
}

// Runs `body` as root in a private mount namespace, chrooted into a 0755 tmpfs holding
// /var/lib (0755, root's). 77: the precondition is missing.
int InFakeRoot(const std::function<int()>& body) {
  return InChild([&body] {
    if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0) return 77;
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    char tmpl[] = "/tmp/skillmcp-hoststate-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 77;
    if (mount("tmpfs", tmpl, "tmpfs", 0, "mode=0755") != 0) return 77;
    const std::string t = tmpl;
    if (mkdir((t + "/var").c_str(), 0755) != 0 || mkdir((t + "/var/lib").c_str(), 0755) != 0)
      return 77;
    if (chroot(tmpl) != 0 || chdir("/") != 0) return 77;
    return body();
  });
}

constexpr uid_t kUid = 64101;
constexpr gid_t kGid = 64102;

bool Refused(const HostStateDefault& d, const std::string& why) {
  return d.applies && d.path.empty() && d.error.find(why) != std::string::npos;
}

TEST(PrepareHostStateDir, MakesTheDirectoryForTheServiceUserAndAcceptsItAgain) {
  const int code = InFakeRoot([] {
    HostStateDefault d = PrepareHostStateDir(kHostStateDir, kUid, kGid);
    if (d.path != kHostStateDir || !d.error.empty()) return 1;
    struct stat st {};
    if (lstat(kHostStateDir, &st) != 0 || !S_ISDIR(st.st_mode)) return 2;
    if (st.st_uid != kUid || st.st_gid != kGid || (st.st_mode & 07777) != 0700) return 3;
    // Made once, then shared: the next root broker accepts what the first one made.
    if (PrepareHostStateDir(kHostStateDir, kUid, kGid).path != kHostStateDir) return 4;
    return 0;
  });
  if (code == 77) GTEST_SKIP() << "needs root and a private mount namespace";
  EXPECT_EQ(code, 0);
}

TEST(PrepareHostStateDir, RefusesAWrongOwnerOrMode) {
  const int code = InFakeRoot([] {
    if (mkdir(kHostStateDir, 0700) != 0 || chown(kHostStateDir, 64103, 64103) != 0) return 1;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid),
                 "belongs to uid 64103 with mode 0700"))
      return 2;
    if (chown(kHostStateDir, kUid, kGid) != 0 || chmod(kHostStateDir, 0750) != 0) return 3;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid), "with mode 0750")) return 4;
    // Nothing was repaired: the operator decides.
    struct stat st {};
    if (stat(kHostStateDir, &st) != 0 || (st.st_mode & 07777) != 0750) return 5;
    if (chmod(kHostStateDir, 0700) != 0) return 6;
    return PrepareHostStateDir(kHostStateDir, kUid, kGid).path == kHostStateDir ? 0 : 7;
  });
  if (code == 77) GTEST_SKIP() << "needs root and a private mount namespace";
  EXPECT_EQ(code, 0);
}

TEST(PrepareHostStateDir, RefusesAPathOthersThanRootCouldChange) {
  const int code = InFakeRoot([] {
    if (chmod("/var/lib", 0775) != 0) return 1;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid),
                 "/var/lib can be written by others than root"))
      return 2;
    // Unlike the walk of a configured directory, sticky is no excuse here.
    if (chmod("/var/lib", 01777) != 0) return 3;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid), "/var/lib can be written"))
      return 4;
    if (chmod("/var/lib", 0755) != 0 || chown("/var", 1000, 1000) != 0) return 5;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid),
                 "/var belongs to uid 1000, not root"))
      return 6;
    if (chown("/var", 0, 0) != 0) return 7;
    struct stat st {};
    // Nothing was made while the path was in doubt.
    if (lstat(kHostStateDir, &st) == 0) return 8;
    return PrepareHostStateDir(kHostStateDir, kUid, kGid).path == kHostStateDir ? 0 : 9;
  });
  if (code == 77) GTEST_SKIP() << "needs root and a private mount namespace";
  EXPECT_EQ(code, 0);
}

TEST(PrepareHostStateDir, RefusesALinkAndARelativePath) {
  const int code = InFakeRoot([] {
    if (mkdir("/elsewhere", 0700) != 0 || chown("/elsewhere", kUid, kGid) != 0) return 1;
    if (symlink("/elsewhere", kHostStateDir) != 0) return 2;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid), "not a link")) return 3;
    if (unlink(kHostStateDir) != 0 || rmdir("/var/lib") != 0) return 4;
    if (symlink("/elsewhere", "/var/lib") != 0) return 5;
    if (!Refused(PrepareHostStateDir(kHostStateDir, kUid, kGid), "cannot open /var/lib")) return 6;
    if (!Refused(PrepareHostStateDir("var/lib/skill-mcp", kUid, kGid), "not an absolute path"))
      return 7;
    return 0;
  });
  if (code == 77) GTEST_SKIP() << "needs root and a private mount namespace";
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace skillmcp
