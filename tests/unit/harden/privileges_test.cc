#include "broker/harden/privileges.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>

#include "tests/unit/harden/child.h"

namespace skillmcp {
namespace {

using testing::InChild;

std::string StatusLine(const char* key) {
  int fd = open("/proc/self/status", O_RDONLY);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, n);
  close(fd);
  std::string k = std::string("\n") + key + ":\t";
  size_t at = text.find(k);
  if (at == std::string::npos) return "";
  size_t start = at + k.size();
  return text.substr(start, text.find('\n', start) - start);
}

constexpr char kNoService[] = "skill-mcp-test-no-such-service";
constexpr char kNoRunAs[] = "skill-mcp-test-no-such-run";

TEST(ResolveIdentity, NamesNumbersAndRootRefusal) {
  Identity nobody = ResolveIdentity("nobody", kFallbackRunAsId);
  ASSERT_TRUE(nobody.ok) << nobody.error;
  EXPECT_EQ(nobody.uid, getpwnam("nobody")->pw_uid);

  Identity num = ResolveIdentity("1234", kFallbackRunAsId);
  ASSERT_TRUE(num.ok);
  EXPECT_EQ(num.uid, 1234u);
  EXPECT_EQ(num.gid, 1234u);
  Identity pair = ResolveIdentity("1234:99", kFallbackRunAsId);
  EXPECT_EQ(pair.gid, 99u);
  EXPECT_FALSE(ResolveIdentity("1234:x", kFallbackRunAsId).ok);

  // Root is never a run-as or service identity, however it is spelled.
  EXPECT_FALSE(ResolveIdentity("root", kFallbackRunAsId).ok);
  EXPECT_FALSE(ResolveIdentity("0", kFallbackRunAsId).ok);
  EXPECT_FALSE(ResolveIdentity("1234:0", kFallbackRunAsId).ok);
  EXPECT_FALSE(ResolveIdentity("", kFallbackRunAsId).ok);
}

TEST(ResolveIdentity, MissingUserFallsBackToAnUnownedFixedId) {
  if (getpwuid(kFallbackRunAsId) != nullptr) GTEST_SKIP() << "uid 64000 has a passwd entry here";
  Identity id = ResolveIdentity(kNoRunAs, kFallbackRunAsId);
  ASSERT_TRUE(id.ok) << id.error;
  EXPECT_EQ(id.uid, kFallbackRunAsId);
  EXPECT_EQ(id.gid, kFallbackRunAsId);
  EXPECT_NE(id.how.find("no passwd entry"), std::string::npos);
}

TEST(ResolveIdentity, MissingUserRefusesAFallbackOwnedBySomeoneElse) {
  passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  Identity id = ResolveIdentity(kNoRunAs, nobody->pw_uid);
  EXPECT_FALSE(id.ok);
  EXPECT_NE(id.error.find("belongs to nobody"), std::string::npos) << id.error;
}

// Would fail if the switch kept any capability beyond the four, kept root's uid or
// groups, left ambient caps, or left the process dumpable.
TEST(DropPrivileges, AsRootKeepsExactlySetuidSetgidKillSetpcap) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  if (getpwuid(kFallbackRunAsId) || getpwuid(kFallbackServiceId))
    GTEST_SKIP() << "fallback ids have passwd entries here";
  int rc = InChild([] {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    PrivilegeState st = DropPrivileges({kNoService, kNoRunAs});
    if (!st.ok() || !st.broker_switched) return 1;
    std::string want_ids = std::to_string(kFallbackServiceId);
    std::string ids = want_ids + "\t" + want_ids + "\t" + want_ids + "\t" + want_ids;
    if (StatusLine("Uid") != ids || StatusLine("Gid") != ids) return 2;
    if (getgroups(0, nullptr) != 0) return 3;
    // CAP_KILL = 5, CAP_SETGID = 6, CAP_SETUID = 7, CAP_SETPCAP = 8.
    if (StatusLine("CapPrm") != "00000000000001e0") return 4;
    if (StatusLine("CapEff") != "00000000000001e0") return 5;
    if (StatusLine("CapBnd") != "00000000000001e0") return 6;
    if (StatusLine("CapAmb") != "0000000000000000") return 7;
    if (StatusLine("CapInh") != "00000000000001c0") return 8;
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) return 9;
    if (!st.worker_switch || st.run_as.uid != kFallbackRunAsId) return 10;
    if (!st.caps_reduced || !st.can_signal_other_uid) return 11;
    // CAP_SETUID is still usable to launch workers under the run-as uid.
    if (setresuid(kFallbackRunAsId, kFallbackRunAsId, kFallbackRunAsId) != 0) return 12;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// A root broker whose bounding set holds only the setid caps and CAP_KILL (podman
// --cap-drop ALL --cap-add SETUID,SETGID,KILL --user root) has no CAP_SETPCAP: every
// bounding drop is EPERM there, and the caps already gone must not count as a failure.
TEST(DropPrivileges, AsRootWithoutSetpcapStillSwitches) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  if (getpwuid(kFallbackRunAsId) || getpwuid(kFallbackServiceId))
    GTEST_SKIP() << "fallback ids have passwd entries here";
  int rc = InChild([] {
    const int last = static_cast<int>(cap_max_bits()) - 1;
    for (int c = 0; c <= last; ++c) {
      if (c == CAP_SETUID || c == CAP_SETGID || c == CAP_KILL || c == CAP_SETPCAP) continue;
      if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) return 20;
    }
    if (prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0) != 0) return 21;
    cap_t three = cap_from_text("cap_setuid,cap_setgid,cap_kill=ep");
    if (three == nullptr || cap_set_proc(three) != 0) return 22;
    cap_free(three);
    PrivilegeState st = DropPrivileges({kNoService, kNoRunAs});
    if (!st.ok() || !st.broker_switched) return 1;
    if (StatusLine("CapBnd") != "00000000000000e0") return 2;
    if (StatusLine("CapPrm") != "00000000000000e0") return 3;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(DropPrivileges, RunAsEqualToServiceUidIsRefused) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  int rc = InChild([] {
    PrivilegeState st = DropPrivileges({"4242", "4242"});
    if (st.broker_switched || st.ok()) return 1;
    if (st.detail.find("equals the broker's service uid") == std::string::npos) return 2;
    return getuid() == 0 ? 0 : 3;  // nothing was half-done
  });
  EXPECT_EQ(rc, 0);
}

TEST(DropPrivileges, RootRunAsIsRefused) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  int rc = InChild([] {
    PrivilegeState st = DropPrivileges({"4242", "root"});
    if (st.worker_switch) return 1;
    return st.detail.find("root is refused") != std::string::npos ? 0 : 2;
  });
  EXPECT_EQ(rc, 0);
}

TEST(DropPrivileges, UnprivilegedStartKeepsItsUidAndReportsWhy) {
  int rc = InChild([] {
    if (getuid() == 0 &&
        (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
      return 1;
    uid_t before = getuid();
    PrivilegeState st = DropPrivileges({kNoService, kNoRunAs});
    if (st.switch_demanded || st.broker_switched || st.worker_switch || !st.ok()) return 2;
    if (getuid() != before || st.uid != before) return 3;
    if (!st.caps_reduced) return 5;  // no capability at all: nothing beyond the three
    return st.detail.find("without CAP_SETUID/CAP_SETGID") != std::string::npos ? 0 : 4;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

// Holding CAP_SETUID/CAP_SETGID but not CAP_KILL: workers must not change uid, since
// the broker could not stop them.
TEST(DropPrivileges, NoWorkerSwitchWithoutCapKill) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  if (getpwuid(kFallbackRunAsId) != nullptr) GTEST_SKIP() << "uid 64000 has a passwd entry here";
  int rc = testing::InChild([] {
    // Become uid 4243 keeping only SETUID/SETGID (no CAP_KILL) as systemd's
    // AmbientCapabilities would.
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return 1;
    if (setresgid(4243, 4243, 4243) != 0 || setresuid(4243, 4243, 4243) != 0) return 2;
    cap_t caps = cap_init();
    cap_value_t keep[] = {CAP_SETUID, CAP_SETGID};
    cap_set_flag(caps, CAP_PERMITTED, 2, keep, CAP_SET);
    cap_set_flag(caps, CAP_EFFECTIVE, 2, keep, CAP_SET);
    if (cap_set_proc(caps) != 0) return 3;
    cap_free(caps);
    PrivilegeState st = DropPrivileges({"unused", kNoRunAs});
    if (st.switch_demanded || !st.had_setid_caps) return 4;
    if (st.worker_switch || st.can_signal_other_uid) return 5;
    return st.detail.find("CAP_KILL") != std::string::npos ? 0 : 6;
  });
  EXPECT_EQ(rc, 0);
}

// The same start with CAP_KILL too: the unprivileged-with-caps deployment works.
TEST(DropPrivileges, UnprivilegedWithTheThreeCapsSwitchesWorkers) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  if (getpwuid(kFallbackRunAsId) != nullptr) GTEST_SKIP() << "uid 64000 has a passwd entry here";
  int rc = testing::InChild([] {
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return 1;
    if (setresgid(4243, 4243, 4243) != 0 || setresuid(4243, 4243, 4243) != 0) return 2;
    cap_t caps = cap_init();
    cap_value_t keep[] = {CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_NET_ADMIN};
    cap_set_flag(caps, CAP_PERMITTED, 4, keep, CAP_SET);
    cap_set_flag(caps, CAP_EFFECTIVE, 4, keep, CAP_SET);
    if (cap_set_proc(caps) != 0) return 3;
    cap_free(caps);
    PrivilegeState st = DropPrivileges({"unused", kNoRunAs});
    if (!st.worker_switch || st.run_as.uid != kFallbackRunAsId) return 4;
    if (getuid() != 4243) return 5;
    // CAP_NET_ADMIN (12) is shed; the three stay.
    if (StatusLine("CapEff") != "00000000000000e0") return 6;
    return st.caps_reduced ? 0 : 7;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace skillmcp
