// The group table: sorted, documented, free of duplicates, resolvable, complete.
#include <gtest/gtest.h>
#include <seccomp.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <vector>

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
                           "setpgid",
                           "socket",
                           "socketpair"})
    EXPECT_TRUE(listed.count(must)) << must << " is not in the policy";
}

// Every run's sockets: exactly unix, IPv4, IPv6 and netlink, ascending (the compiler's
// gaps need the order), and both calls that make a socket are held to them.
TEST(PolicyTable, EveryRunMakesSocketsOfTheFourFamiliesOnly) {
  const auto families = AllowedSocketFamilies();
  EXPECT_EQ(std::vector<int>(families.begin(), families.end()),
            (std::vector<int>{AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}));
  std::set<std::string_view> held;
  for (const SyscallGroup& g : WorkerPolicyGroups())
    for (const SyscallRule& r : g.rules)
      if (r.filter == ArgFilter::kSocketFamilyOutside) {
        EXPECT_EQ(g.action, Action::kErrnoEperm) << g.name;
        held.insert(r.name);
      }
  EXPECT_EQ(held, (std::set<std::string_view>{"socket", "socketpair"}));
}

// A set of groups beside the worker policy's: documented, EPERM, sorted, free of
// duplicates and resolvable. Returns the calls they name; `whole` gets those named without
// an argument filter.
std::set<std::string_view> ExpectWellFormedEpermGroups(std::span<const SyscallGroup> groups,
                                                       std::set<std::string_view>* whole) {
  std::set<std::string_view> seen;
  for (size_t i = 0; i < groups.size(); ++i) {
    const SyscallGroup& g = groups[i];
    EXPECT_EQ(g.name.substr(0, 1), "@") << g.name;
    EXPECT_GT(g.why.size(), 20u) << g.name << ": say why";
    EXPECT_EQ(g.action, Action::kErrnoEperm) << g.name << ": callers handle EPERM";
    if (i > 0) {
      EXPECT_LT(groups[i - 1].name, g.name) << "groups must stay sorted";
    }
    for (size_t j = 0; j < g.rules.size(); ++j) {
      const SyscallRule& r = g.rules[j];
      if (j > 0) {
        EXPECT_LT(g.rules[j - 1].name, r.name) << g.name << " must stay sorted";
      }
      EXPECT_TRUE(seen.insert(r.name).second) << r.name << " is in two groups";
      if (r.filter == ArgFilter::kAny) whole->insert(r.name);
      const std::string name(r.name);
      // A call libseccomp does not know yet must carry its number (from 424 on, one
      // number on every architecture).
      if (seccomp_syscall_resolve_name(name.c_str()) < 0) {
        EXPECT_GE(r.number, 424) << name << " in " << g.name;
      }
    }
  }
  return seen;
}

// A set of groups added to the worker policy for some runs: well formed, and new beside
// the worker policy. Returns the calls they name.
std::set<std::string_view> ExpectWellFormedAddedGroups(std::span<const SyscallGroup> groups) {
  std::set<std::string_view> base;
  for (const SyscallGroup& g : WorkerPolicyGroups())
    for (const SyscallRule& r : g.rules) base.insert(r.name);
  std::set<std::string_view> whole;
  const std::set<std::string_view> seen = ExpectWellFormedEpermGroups(groups, &whole);
  // A name may stand in both only with an argument filter (ioctl's requests).
  for (std::string_view name : whole)
    EXPECT_FALSE(base.count(name)) << name << " is already in the worker policy";
  return seen;
}

TEST(PolicyTable, NoViewGroupsAreSortedDocumentedResolvableAndNew) {
  const auto groups = NoViewPolicyGroups();
  ASSERT_FALSE(groups.empty());
  const std::set<std::string_view> listed = ExpectWellFormedAddedGroups(groups);
  for (const char* must : {"socket", "socketpair", "ioctl", "file_setattr", "mq_open",
                           "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
                           "mq_getsetattr", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown",
                           "fchown", "lchown", "fchownat", "utime", "utimes", "utimensat",
                           "futimesat", "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
                           "removexattr", "lremovexattr", "fremovexattr", "removexattrat",
                           "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv",
                           "msgctl", "semget", "semop", "semtimedop", "semctl"})
    EXPECT_TRUE(listed.count(must)) << must << " is not refused without a view";
  // The unix socket group alone is one of them, whole.
  for (const SyscallGroup& g : UnixSocketGroups()) {
    bool in_no_view = false;
    for (const SyscallGroup& n : groups) in_no_view = in_no_view || n.name == g.name;
    EXPECT_TRUE(in_no_view) << g.name;
  }
}

TEST(PolicyTable, InetGroupsAreSortedDocumentedResolvableAndApart) {
  const auto groups = InetSocketGroups();
  ASSERT_FALSE(groups.empty());
  ExpectWellFormedAddedGroups(groups);
  std::set<std::string_view> other_groups;
  for (const SyscallGroup& g : WorkerPolicyGroups()) other_groups.insert(g.name);
  for (const SyscallGroup& g : NoViewPolicyGroups()) other_groups.insert(g.name);
  bool refuses_socket = false;
  for (const SyscallGroup& g : groups) {
    EXPECT_FALSE(other_groups.count(g.name)) << g.name << " is also a door or base group";
    for (const SyscallRule& r : g.rules)
      refuses_socket =
          refuses_socket || (r.name == "socket" && r.filter == ArgFilter::kInetSocketDomain);
  }
  EXPECT_TRUE(refuses_socket) << "socket(AF_INET/AF_INET6) is not refused";
}

// The ways round a socket() rule: io_uring makes sockets (IORING_OP_SOCKET) and is refused
// by every policy; socketcall multiplexes socket() behind a pointer a filter cannot read,
// and exists only on ABIs whose calls the fixed prefix kills (i386 on x86_64).
TEST(PolicyTable, NoOtherWayToASocketOnTheNativeArchitecture) {
  std::set<std::string_view> base;
  for (const SyscallGroup& g : WorkerPolicyGroups())
    for (const SyscallRule& r : g.rules) base.insert(r.name);
  for (const char* s : {"io_uring_setup", "io_uring_enter", "io_uring_register"})
    EXPECT_TRUE(base.count(s)) << s << " is not refused";
  EXPECT_LT(seccomp_syscall_resolve_name("socketcall"), 0)
      << "this architecture has socketcall: a socket() rule alone does not hold here";
}

// The mirror's own filter: its own table, well formed, EPERM throughout, shutting every way
// to a new or readdressed endpoint and none of the calls its relay makes
// (tests/unit/worker/mirror_seccomp_test.cc makes them on the kernel).
TEST(PolicyTable, MirrorGroupsShutEveryEndpointAndNothingTheRelayMakes) {
  const auto groups = MirrorPolicyGroups();
  ASSERT_FALSE(groups.empty());
  std::set<std::string_view> whole;
  const std::set<std::string_view> listed = ExpectWellFormedEpermGroups(groups, &whole);
  for (const char* must :
       {"bind", "connect", "io_uring_enter", "io_uring_register", "io_uring_setup", "listen",
        "sendmmsg", "sendmsg", "socket", "socketpair"})
    EXPECT_TRUE(whole.count(must)) << must << " is open to the mirror";
  EXPECT_TRUE(listed.count("sendto") && !whole.count("sendto"))
      << "sendto: refused with MSG_FASTOPEN only (the resolver answers with it)";
  for (const char* needed :
       {"accept4", "close", "fcntl", "getppid", "getsockname", "kill", "pipe2", "poll", "read",
        "recvfrom", "recvmsg", "setsockopt", "shutdown", "signalfd4", "splice", "wait4", "write"})
    EXPECT_FALSE(listed.count(needed)) << needed << " is refused to the mirror's relay";
}

// The fence a run gets, from what its view closes (every combination).
TEST(PolicyTable, TheDoorFenceFollowsWhatTheViewCloses) {
  for (bool fresh_proc : {false, true})
    for (uint32_t abi : {0u, 5u, 6u, 7u})
      EXPECT_EQ(DoorFenceFor(false, fresh_proc, abi), DoorFence::kNoView) << "no view";
  EXPECT_EQ(DoorFenceFor(true, false, 0), DoorFence::kNoView) << "/proc/<pid>/root leads out";
  EXPECT_EQ(DoorFenceFor(true, true, 0), DoorFence::kUnixSockets) << "abstract sockets";
  EXPECT_EQ(DoorFenceFor(true, false, 5), DoorFence::kUnixSockets) << "abstract sockets";
  EXPECT_EQ(DoorFenceFor(true, true, 5), DoorFence::kUnixSockets) << "abstract sockets";
  EXPECT_EQ(DoorFenceFor(true, false, 6), DoorFence::kNone);
  EXPECT_EQ(DoorFenceFor(true, true, 7), DoorFence::kNone);
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
