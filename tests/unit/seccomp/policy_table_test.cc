// The group table: sorted, documented, free of duplicates, resolvable, complete.
#include <gtest/gtest.h>
#include <seccomp.h>

#include <algorithm>
#include <set>
#include <string>

#include "seccomp/policy.h"

namespace skillmcp::seccomp {
namespace {

TEST(PolicyTable, GroupsAreSortedByNameAndDocumented) {
  const auto groups = WorkerPolicyGroups();
  ASSERT_FALSE(groups.empty());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(groups[i].name.substr(0, 1), "@") << groups[i].name;
    EXPECT_GT(groups[i].why.size(), 20u) << groups[i].name << ": say why";
    EXPECT_FALSE(groups[i].rules.empty()) << groups[i].name;
    if (i > 0) {
      EXPECT_LT(groups[i - 1].name, groups[i].name) << "groups must stay sorted";
    }
  }
}

TEST(PolicyTable, SyscallsAreSortedWithinEachGroupAndNeverListedTwice) {
  std::set<std::string_view> seen;
  for (const SyscallGroup& g : WorkerPolicyGroups()) {
    for (size_t i = 0; i < g.rules.size(); ++i) {
      if (i > 0) {
        EXPECT_LT(g.rules[i - 1].name, g.rules[i].name) << g.name << " must stay sorted";
      }
      EXPECT_TRUE(seen.insert(g.rules[i].name).second) << g.rules[i].name << " is in two groups";
    }
  }
}

TEST(PolicyTable, EveryNameResolvesOnTheNativeArchitecture) {
  for (const SyscallGroup& g : WorkerPolicyGroups())
    for (const SyscallRule& r : g.rules) {
      const std::string name(r.name);
      EXPECT_GE(seccomp_syscall_resolve_name(name.c_str()), 0) << name << " in " << g.name;
    }
}

// What the policy must deny (docs/isolation.md, "The seccomp filter"), independent of how
// the table groups it.
TEST(PolicyTable, CoversEveryRequiredSyscall) {
  std::set<std::string_view> listed;
  for (const SyscallGroup& g : WorkerPolicyGroups())
    for (const SyscallRule& r : g.rules) listed.insert(r.name);
  for (const char* must : {"ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "perf_event_open",
                           "bpf",
                           "userfaultfd",
                           "keyctl",
                           "landlock_create_ruleset",
                           "landlock_add_rule",
                           "landlock_restrict_self",
                           "add_key",
                           "request_key",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "unshare",
                           "setns",
                           "clone",
                           "clone3",
                           "mount",
                           "umount2",
                           "fsopen",
                           "fsconfig",
                           "fsmount",
                           "fspick",
                           "move_mount",
                           "open_tree",
                           "mount_setattr",
                           "pivot_root",
                           "chroot",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "kexec_load",
                           "kexec_file_load",
                           "reboot",
                           "swapon",
                           "swapoff",
                           "acct",
                           "settimeofday",
                           "clock_settime",
                           "clock_adjtime",
                           "adjtimex",
                           "iopl",
                           "ioperm",
                           "quotactl",
                           "syslog",
                           "open_by_handle_at",
                           "name_to_handle_at",
                           "personality",
                           "setsid",
                           "setpgid"})
    EXPECT_TRUE(listed.count(must)) << must << " is not in the policy";
}

TEST(PolicyTable, FallbackSyscallsAnswerEnosysAndCrossProcessKills) {
  auto action_of = [](std::string_view name) {
    for (const SyscallGroup& g : WorkerPolicyGroups())
      for (const SyscallRule& r : g.rules)
        if (r.name == name) return g.action;
    return Action::kKillProcess;
  };
  // libc and libuv fall back on ENOSYS, not on EPERM.
  for (const char* s : {"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register"})
    EXPECT_EQ(action_of(s), Action::kErrnoEnosys) << s;
  for (const char* s : {"ptrace", "process_vm_readv", "process_vm_writev"})
    EXPECT_EQ(action_of(s), Action::kKillProcess) << s;
  EXPECT_EQ(ActionErrno(Action::kErrnoEnosys), ENOSYS);
  EXPECT_EQ(ActionErrno(Action::kErrnoEperm), EPERM);
  EXPECT_EQ(ActionErrno(Action::kKillProcess), 0);
}

}  // namespace
}  // namespace skillmcp::seccomp
