// The run range against the host's ids (broker/run/host_ids.h), with fixture files for
// /etc/passwd, /etc/group, /etc/subuid and /etc/subgid: the low ids, a user, a group and a
// subordinate range in the range are clashes, naming the file; missing files hold nothing,
// an unreadable one fails closed. Through ResolveRunIdentity: the default range with a
// clash turns identity off and runs go on; a named range with a clash refuses runs.
#include "broker/run/host_ids.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "broker/harden/env_store.h"
#include "broker/run/run_identity.h"

namespace skillmcp {
namespace {

constexpr RunUidRange kDefault = kDefaultRunUidRange;

TEST(PasswdAndGroupIdInRange, FindTheIdFieldsInTheRange) {
  const std::string passwd =
      "root:x:0:0:root:/root:/bin/bash\n"
      "# a comment:x:1879048200:0\n"
      "+nis:x:1879048201:0::/:\n"
      "odd:x:notanumber:0::/:\n"
      "alice:x:1000:1000::/home/alice:/bin/bash\n";
  EXPECT_EQ(PasswdIdInRange(passwd, kDefault), "");
  EXPECT_EQ(PasswdIdInRange(passwd + "mapped:x:1879048300:100::/:/bin/sh\n", kDefault),
            "uid 1879048300 (mapped)");
  // A user whose primary group lies in the range.
  EXPECT_EQ(PasswdIdInRange(passwd + "grp:x:1001:1879048301::/:/bin/sh\n", kDefault),
            "gid 1879048301 (grp)");
  EXPECT_EQ(GroupIdInRange("ops:x:1879113727:\n", kDefault), "gid 1879113727 (ops)");
  EXPECT_EQ(GroupIdInRange("ops:x:1879113728:\n", kDefault), "");
  EXPECT_EQ(GroupIdInRange("ops:x:1879048191:\n", kDefault), "");
}

TEST(SubordinateRangeOverlapping, AnyOverlapCounts) {
  EXPECT_EQ(SubordinateRangeOverlapping("alice:100000:65536\n", kDefault), "");
  // Ends on the range's first uid.
  EXPECT_EQ(SubordinateRangeOverlapping("bob:1879000000:48193\n", kDefault),
            "1879000000-1879048192 of bob");
  // Ends just below it.
  EXPECT_EQ(SubordinateRangeOverlapping("bob:1879000000:48192\n", kDefault), "");
  // Starts inside; the range inside it whole; a numeric owner.
  EXPECT_EQ(SubordinateRangeOverlapping("1000:1879113727:10\n", kDefault),
            "1879113727-1879113736 of 1000");
  EXPECT_EQ(SubordinateRangeOverlapping("c:1000000000:1000000000\n", kDefault),
            "1000000000-1999999999 of c");
  EXPECT_EQ(SubordinateRangeOverlapping("# c:1879048192:10\nbad:x:y\nz:1879048192:0\n", kDefault),
            "");
}

class HostIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-ids-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    files_ = {dir_ + "/passwd", dir_ + "/group", dir_ + "/subuid", dir_ + "/subgid"};
    Write(files_.passwd, "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/a:/bin/sh\n");
    Write(files_.group, "root:x:0:\nalice:x:1000:\n");
    Write(files_.subuid, "alice:100000:65536\n");
    Write(files_.subgid, "alice:100000:65536\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }
  std::string dir_;
  HostIdFiles files_;
};

TEST_F(HostIdsTest, AClearHostPassesTheDefaultRange) {
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_), "");
  std::filesystem::remove(files_.subuid);  // missing: nothing to clash with
  std::filesystem::remove(files_.subgid);
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_), "");
}

TEST_F(HostIdsTest, TheLowIdsAreRefusedWhateverTheFilesSay) {
  EXPECT_EQ(RangeClashWithHostIds({1000, 1009}, files_),
            "1000-1009 overlaps 0-60000, the system and regular users of a Debian host");
  EXPECT_NE(RangeClashWithHostIds({59990, 60000}, files_), "");
  EXPECT_EQ(RangeClashWithHostIds({60001, 60010}, files_), "");
}

TEST_F(HostIdsTest, EachFileNamesItsClash) {
  Write(files_.passwd, "svc:x:1879048500:1879048500::/:/bin/sh\n");
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_),
            "1879048192-1879113727 holds uid 1879048500 (svc) of " + files_.passwd);
  Write(files_.passwd, "root:x:0:0::/:\n");
  Write(files_.group, "svc:x:1879048500:\n");
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_),
            "1879048192-1879113727 holds gid 1879048500 (svc) of " + files_.group);
  Write(files_.group, "root:x:0:\n");
  Write(files_.subuid, "alice:100000:65536\nctr:1879048192:65536\n");
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_),
            "1879048192-1879113727 overlaps the subordinate ids 1879048192-1879113727 of ctr in " +
                files_.subuid);
  Write(files_.subuid, "");
  Write(files_.subgid, "ctr:1879100000:10\n");
  EXPECT_EQ(RangeClashWithHostIds(kDefault, files_),
            "1879048192-1879113727 overlaps the subordinate ids 1879100000-1879100009 of ctr in " +
                files_.subgid);
}

TEST_F(HostIdsTest, AFileThatCannotBeReadFailsClosed) {
  std::filesystem::remove(files_.group);
  ASSERT_EQ(mkdir(files_.group.c_str(), 0700), 0);  // read() fails with EISDIR
  const std::string why = RangeClashWithHostIds(kDefault, files_);
  EXPECT_EQ(why.rfind("1879048192-1879113727 cannot be checked against " + files_.group, 0), 0u)
      << why;
}

// Through the boot resolution: what a clash does to the default and to a named range.
class ResolveWithHostIdsTest : public HostIdsTest {
 protected:
  LaunchConfig Config() {
    LaunchConfig c;
    c.switch_ids = true;
    c.uid = 64000;
    c.gid = 64000;
    c.run_as = "skill-mcp-run (64000)";
    return c;
  }
};

TEST_F(ResolveWithHostIdsTest, TheDefaultRangeClashingTurnsIdentityOffAndRunsGoOn) {
  Write(files_.subuid, "ctr:1879048192:65536\n");
  EnvStore env;
  LaunchConfig c = Config();
  EXPECT_EQ(ResolveRunIdentity(env, PrivilegeState{}, c, files_), "");
  EXPECT_FALSE(c.run_uids);
  EXPECT_FALSE(c.run_uids_demanded);
  EXPECT_EQ(RunIdentityRefusal(c), "");
  EXPECT_NE(c.run_uids_off_reason.find("the default range 1879048192-1879113727 overlaps the "
                                       "subordinate ids 1879048192-1879113727 of ctr in " +
                                       files_.subuid),
            std::string::npos)
      << c.run_uids_off_reason;
  EXPECT_NE(c.run_uids_off_reason.find("every run shares skill-mcp-run (64000)"), std::string::npos)
      << c.run_uids_off_reason;
}

TEST_F(ResolveWithHostIdsTest, ANamedRangeClashingRefusesRuns) {
  Write(files_.passwd, "svc:x:1879100005:100::/:/bin/sh\n");
  EnvStore env;
  env.Set("SKILL_MCP_RUN_UIDS", "1879100000-1879100009");
  LaunchConfig c = Config();
  EXPECT_EQ(ResolveRunIdentity(env, PrivilegeState{}, c, files_), "");
  EXPECT_FALSE(c.run_uids);
  EXPECT_TRUE(c.run_uids_demanded);
  const std::string refusal = RunIdentityRefusal(c);
  EXPECT_NE(refusal.find("the range 1879100000-1879100009 holds uid 1879100005 (svc) of " +
                         files_.passwd),
            std::string::npos)
      << refusal;
  // The low ids: refused for a named range even with clean files.
  Write(files_.passwd, "");
  env.Set("SKILL_MCP_RUN_UIDS", "1000-1009");
  c = Config();
  EXPECT_EQ(ResolveRunIdentity(env, PrivilegeState{}, c, files_), "");
  EXPECT_NE(RunIdentityRefusal(c).find("overlaps 0-60000"), std::string::npos)
      << RunIdentityRefusal(c);
}

}  // namespace
}  // namespace skillmcp
