// The host-wide state directory (broker/harden/state_dir.h): the walk from "/" checks "/"
// itself, and a state directory in a private /tmp is reported as not host-wide.
#include "broker/harden/state_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/harden/child.h"

namespace skillmcp {
namespace {

using testing::InChild;

TEST(ResolveStateBase, OrderIsOptionThenSystemdThenRuntimeDir) {
  std::map<std::string, std::string, std::less<>> vars = {{"SKILL_MCP_STATE_DIR", "/a"},
                                                          {"STATE_DIRECTORY", "/b/skill-mcp:/c"},
                                                          {"XDG_RUNTIME_DIR", "/run/user/1"}};
  auto get = [&vars](std::string_view n) -> std::optional<std::string> {
    auto it = vars.find(n);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  EXPECT_EQ(ResolveStateBase(get).base, "/a");
  vars.erase("SKILL_MCP_STATE_DIR");
  EXPECT_EQ(ResolveStateBase(get).base, "/b/skill-mcp");
  // Another service's state directory (inherited by a broker it started) is not ours.
  vars["STATE_DIRECTORY"] = "/var/lib/other-service";
  EXPECT_EQ(ResolveStateBase(get).base, "/run/user/1");
  EXPECT_FALSE(UnitStateDirectory(get));
  vars["STATE_DIRECTORY"] = "/var/lib/skill-mcp-evil:/var/lib/skill-mcp";
  EXPECT_FALSE(UnitStateDirectory(get));
  vars.erase("STATE_DIRECTORY");
  StateBase x = ResolveStateBase(get);
  EXPECT_EQ(x.base, "/run/user/1");
  EXPECT_EQ(x.subdirs, std::vector<std::string>{"skill-mcp"});
  vars.clear();
  EXPECT_TRUE(ResolveStateBase(get).base.empty());
  EXPECT_FALSE(OpenStateDirFromEnv(get, {"run-uids"}).fd);
}

// A "/" that others may write (no sticky bit) is not trusted: in a child, in its own user
// and mount namespace, chrooted into a 0777 tmpfs holding a good state directory.
TEST(OpenStateSubdir, AWritableRootIsRefused) {
  const int code = InChild([] {
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
    std::ofstream("/proc/self/setgroups") << "deny";
    std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
    std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    char tmpl[] = "/tmp/skillmcp-root-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 77;
    if (mount("tmpfs", tmpl, "tmpfs", 0, "mode=0777") != 0) return 77;
    if (mkdir((std::string(tmpl) + "/state").c_str(), 0700) != 0) return 3;
    if (chroot(tmpl) != 0 || chdir("/") != 0) return 77;
    OpenedStateDir open = OpenStateSubdir("/state", {"run-uids"});
    if (open.fd) return 4;
    if (open.error.find("/ can be written by other users") == std::string::npos) return 5;
    chmod("/", 01777);  // sticky: as /tmp, others cannot replace our entries
    return OpenStateSubdir("/state", {"run-uids"}).fd ? 0 : 6;
  });
  if (code == 77) GTEST_SKIP() << "no user and mount namespace for the test here";
  EXPECT_EQ(code, 0);
}

constexpr char kPrivateTmp[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "90 22 8:1 /tmp/systemd-private-1f2e-skill-mcp@1.service-Ab12/tmp /tmp rw,relatime "
    "shared:50 - ext4 /dev/sda1 rw\n"
    "91 22 8:1 /var/tmp/systemd-private-1f2e-skill-mcp@1.service-Cd34/tmp /var/tmp rw "
    "shared:51 - ext4 /dev/sda1 rw\n";
constexpr char kSharedTmp[] =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "30 22 0:30 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw\n";

TEST(PrivateTmpProblem, AStateDirInAPrivateTmpIsNotHostWide) {
  EXPECT_NE(PrivateTmpProblem("/tmp/state", kPrivateTmp, std::nullopt).find("private /tmp"),
            std::string::npos);
  EXPECT_NE(PrivateTmpProblem("/var/tmp/s", kPrivateTmp, std::nullopt).find("private /var/tmp"),
            std::string::npos);
  EXPECT_EQ(PrivateTmpProblem("/var/lib/skill-mcp", kPrivateTmp, std::nullopt), "");
  EXPECT_EQ(PrivateTmpProblem("/tmpfoo/state", kPrivateTmp, std::nullopt), "");
  EXPECT_EQ(PrivateTmpProblem("/tmp/state", kSharedTmp, std::nullopt), "");
  EXPECT_EQ(PrivateTmpProblem("/tmp/state", kSharedTmp, false), "");
  // /proc/1/root/tmp is another directory: private, whatever mountinfo says.
  EXPECT_NE(PrivateTmpProblem("/tmp/state", kSharedTmp, true), "");
}

}  // namespace
}  // namespace skillmcp
