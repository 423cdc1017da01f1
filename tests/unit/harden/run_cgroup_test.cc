#include "broker/harden/run_cgroup.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace skillmcp {
namespace {

struct FakeFs {
  std::map<std::string, std::string> files;
  std::set<std::string> writable;
  CgroupFacts Read(const std::string& proc_cgroup, const std::string& mountinfo) const {
    return ReadCgroupFacts(
        proc_cgroup, mountinfo,
        [this](const std::string& p, std::string* t) {
          auto it = files.find(p);
          if (it == files.end()) return false;
          *t = it->second;
          return true;
        },
        [this](const std::string& p) { return writable.count(p) > 0; });
  }
};

// The mounts of a hybrid host (this project's CI machines): v1 controllers, an empty v2.
const char kHybridMounts[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const char kHybridCgroup[] = "9:pids:/user.slice\n4:memory:/user.slice\n0::/user.slice\n";

const char kV2Mounts[] =
    "30 23 0:27 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
const char kV2Cgroup[] = "0::/system.slice/skill-mcp@3.service\n";
const char kUnit[] = "/sys/fs/cgroup/system.slice/skill-mcp@3.service";

TEST(RunCgroup, HybridHostSaysV1AndReportsTheV1MemoryLimit) {
  FakeFs fs;
  fs.files["/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes"] = "536870912\n";
  fs.files["/sys/fs/cgroup/pids/user.slice/pids.max"] = "max\n";
  CgroupFacts f = fs.Read(kHybridCgroup, kHybridMounts);
  EXPECT_TRUE(f.v1_memory_or_pids);
  EXPECT_EQ(f.connection_bound, "memory.limit_in_bytes 512 MiB (/user.slice)");
  std::string why = RunCgroupReason(f);
  EXPECT_NE(why.find("memory and pids controllers to cgroup v1"), std::string::npos) << why;
  EXPECT_NE(why.find("the connection by its cgroup: memory.limit_in_bytes 512 MiB"),
            std::string::npos)
      << why;
}

// v1 reports "no limit" as a page-rounded 2^63; that is no bound at all.
TEST(RunCgroup, UnlimitedV1MemoryIsNoBound) {
  FakeFs fs;
  fs.files["/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes"] = "9223372036854771712\n";
  CgroupFacts f = fs.Read(kHybridCgroup, kHybridMounts);
  EXPECT_EQ(f.connection_bound, "");
  EXPECT_NE(RunCgroupReason(f).find("has no memory or task limit"), std::string::npos);
}

TEST(RunCgroup, V2NotDelegatedNamesTheCgroupAndFindsTheAncestorsLimits) {
  FakeFs fs;
  fs.files[std::string(kUnit) + "/cgroup.controllers"] = "cpu io memory pids\n";
  fs.files[std::string(kUnit) + "/memory.max"] = "max\n";
  fs.files["/sys/fs/cgroup/system.slice/memory.max"] = "1073741824\n";
  fs.files[std::string(kUnit) + "/pids.max"] = "64\n";
  CgroupFacts f = fs.Read(kV2Cgroup, kV2Mounts);
  EXPECT_FALSE(f.v1_memory_or_pids);
  EXPECT_TRUE(f.v2_controllers);
  EXPECT_FALSE(f.v2_delegated);
  EXPECT_EQ(f.connection_bound,
            "memory.max 1024 MiB (/system.slice), pids.max 64 (/system.slice/skill-mcp@3.service)");
  EXPECT_NE(RunCgroupReason(f).find("is not delegated to it"), std::string::npos);
}

// Delegation needs both the directory and its subtree_control writable.
TEST(RunCgroup, V2DelegatedIsSaidButStaysOff) {
  FakeFs fs;
  fs.files[std::string(kUnit) + "/cgroup.controllers"] = "memory pids\n";
  fs.writable.insert(kUnit);
  EXPECT_FALSE(fs.Read(kV2Cgroup, kV2Mounts).v2_delegated);
  fs.writable.insert(std::string(kUnit) + "/cgroup.subtree_control");
  CgroupFacts f = fs.Read(kV2Cgroup, kV2Mounts);
  EXPECT_TRUE(f.v2_delegated);
  EXPECT_NE(RunCgroupReason(f).find("builds no per-run cgroups"), std::string::npos);
}

TEST(RunCgroup, V2WithoutMemoryOrPidsControllers) {
  FakeFs fs;
  fs.files[std::string(kUnit) + "/cgroup.controllers"] = "cpu memory\n";
  fs.writable.insert(kUnit);
  fs.writable.insert(std::string(kUnit) + "/cgroup.subtree_control");
  CgroupFacts f = fs.Read(kV2Cgroup, kV2Mounts);
  EXPECT_FALSE(f.v2_controllers);
  EXPECT_FALSE(f.v2_delegated);
  EXPECT_NE(RunCgroupReason(f).find("does not offer the memory and pids"), std::string::npos);
}

TEST(RunCgroup, NoCgroupMounted) {
  FakeFs fs;
  CgroupFacts f = fs.Read("", "22 1 0:5 / /proc rw - proc proc rw\n");
  EXPECT_FALSE(f.v2_mounted);
  EXPECT_NE(RunCgroupReason(f).find("no cgroup v2 hierarchy is mounted"), std::string::npos);
}

// A mount point with a space is escaped in mountinfo; the files are read at the real path.
TEST(RunCgroup, EscapedMountPoint) {
  FakeFs fs;
  fs.files["/mnt/c g/cgroup.controllers"] = "memory pids\n";
  fs.files["/mnt/c g/pids.max"] = "32\n";
  CgroupFacts f = fs.Read("0::/\n", "40 1 0:40 / /mnt/c\\040g rw - cgroup2 cgroup2 rw\n");
  EXPECT_TRUE(f.v2_controllers);
  EXPECT_EQ(f.connection_bound, "pids.max 32 (/)");
}

// The running process: whatever the host, the reason is complete and never claims a cgroup.
TEST(RunCgroup, OwnProcessGivesAReason) {
  std::string why = RunCgroupReason(ReadOwnCgroupFacts());
  EXPECT_EQ(why.rfind("no per-run cgroup: ", 0), 0u) << why;
  EXPECT_NE(why.find("; a run is bounded per process by the prlimits"), std::string::npos);
  EXPECT_EQ(why.find(']'), std::string::npos) << "the boot line's off [...] list must parse";
}

}  // namespace
}  // namespace skillmcp
