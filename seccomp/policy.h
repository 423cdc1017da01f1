// The seccomp policy a worker installs right before exec'ing the interpreter.
//
// Shape: a deny-list over a default of ALLOW (node, V8 and libuv need a wide and
// version-dependent set; an allow-list would break on every node upgrade), with
// named, documented groups sorted by name, each with one action and a why.
//
// A fixed prefix no group edit can remove (CompileWorkerPolicy, seccomp/compile.h, adds
// it, not the table):
// native architecture only; any foreign ABI (i386 via int 0x80, x32 numbers) kills the
// whole process (SCMP_FLTATR_ACT_BADARCH = KILL_PROCESS). The clone rules are table
// groups (@namespaces: clone() with any CLONE_NEW* flag is EPERM; @clone3-fallback:
// clone3 answers ENOSYS so glibc falls back to clone(), whose flags a filter can see),
// pinned by tests/unit/seccomp/policy_table_test.cc.
//
// Actions: ENOSYS where libc or libuv has a fallback, EPERM where a caller handles a
// refusal (the same errno the kernel gives an unprivileged caller), KILL_PROCESS for
// the clearly hostile: node is multi-threaded, so a kill takes the whole process, never
// a single thread that the others would outlive.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace skillmcp::seccomp {

enum class Action : uint8_t {
  kErrnoEnosys,  // "not implemented here": callers with a fallback take it
  kErrnoEperm,   // "not permitted": what an unprivileged caller already expects
  kKillProcess,  // SIGSYS to the whole thread group
};

// How a syscall's arguments narrow the rule (none = every call).
enum class ArgFilter : uint8_t {
  kAny,
  kCloneNamespaceFlags,  // clone(flags, ...) with any CLONE_NEW* bit
  kPersonalityChange,    // personality(p) for anything but PER_LINUX or the 0xffffffff query
  kTerminalInjectIoctl,  // ioctl(fd, TIOCSTI or TIOCLINUX, ...)
  kUnixSocketDomain,     // socket(AF_UNIX, ...)
  kUnixDatagramPair,     // socketpair(AF_UNIX, SOCK_DGRAM, ...): a datagram end can sendto
                         // any path; stream and seqpacket pairs cannot be readdressed
  kInodeFlagsIoctl,      // ioctl(fd, FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS or FS_IOC_FSSETXATTR)
  kInetSocketDomain,     // socket(AF_INET, ...) and socket(AF_INET6, ...), any type
  kSocketFamilyOutside,  // socket(d, ...) or socketpair(d, ...) for any d (as a whole
                         // 64-bit value) not in AllowedSocketFamilies()
  kFastOpenSend,         // sendto(fd, buf, len, flags, ...) with MSG_FASTOPEN in flags
};

struct SyscallRule {
  std::string_view name;  // as libseccomp names it (seccomp_syscall_resolve_name)
  ArgFilter filter = ArgFilter::kAny;
  // The number, for a call newer than the libseccomp the broker links (2.5.4 does not
  // know setxattrat): from 424 on, a call has one number on every architecture. -1: none.
  int number = -1;
};

struct SyscallGroup {
  std::string_view name;  // "@name", sorted across the table
  std::string_view why;   // one line: what the group shuts and why this action
  Action action;
  std::span<const SyscallRule> rules;  // sorted by name within the group
};

// The policy, pure data (seccomp/policy.cc). Tests keep it sorted, free of
// duplicates and resolvable on the native architecture.
std::span<const SyscallGroup> WorkerPolicyGroups();

// The groups added for a run whose view does not close the doors out of the cell
// (docs/isolation.md, "Doors out of the cell"), sorted likewise: UnixSocketGroups where
// the run can reach sockets it did not make (no view, or abstract sockets unscoped), and
// NoViewPolicyGroups (those and the metadata and IPC groups) where it has no closed view.
std::span<const SyscallGroup> UnixSocketGroups();
std::span<const SyscallGroup> NoViewPolicyGroups();

// The group added for a run without the network (SKILL_MCP_NETWORK=off, and `declared`
// where runs have no namespaces): no IPv4 or IPv6 socket at all, whatever Landlock's ABI.
// Independent of the door fence; sorted likewise.
std::span<const SyscallGroup> InetSocketGroups();

// The run's mirror's own filter (docs/isolation.md, "Declared egress"), a deny-list like
// the run's, sorted likewise: the worker loads it in the mirror after it has forked the
// run, whose processes never inherit it. It shuts every way to open or readdress a network
// endpoint (new sockets, bind, connect, listen, a send that connects, io_uring), which
// the mirror, holding sockets of the egress helper's network, never needs once its
// listeners are made. setsockopt stays: the mirror resets with SO_LINGER, and no option
// readdresses a socket without a capability the mirror has dropped.
std::span<const SyscallGroup> MirrorPolicyGroups();

// Which of those a run gets (seccomp/compile.h): none, the unix socket groups, or all.
enum class DoorFence : uint8_t { kNone, kUnixSockets, kNoView };

// The fence a run needs, from what its view closes (docs/isolation.md, "Doors out of the
// cell"). A namespaced view closes the pathname doors only where the host's processes are
// out of reach too: with the host's /proc in the view, /proc/<pid>/root of another process
// of the run's uid leads around every cover, unless Landlock (any ABI) refuses that access.
// Abstract sockets live in the network namespace, which runs share with the host: only
// Landlock ABI 6 scopes them.
inline DoorFence DoorFenceFor(bool namespaces, bool fresh_proc, uint32_t landlock_abi) {
  if (!namespaces || (!fresh_proc && landlock_abi == 0)) return DoorFence::kNoView;
  return landlock_abi >= 6 ? DoorFence::kNone : DoorFence::kUnixSockets;
}

// The socket families every run may make (@socket-families), ascending: unix, IPv4, IPv6
// and netlink (getifaddrs, and glibc's resolver, read interfaces over it). An allowlist,
// so a family a future kernel adds is refused until it is listed here.
std::span<const int> AllowedSocketFamilies();

// The errno a denied call sees, or 0 for kKillProcess.
int ActionErrno(Action action);

}  // namespace skillmcp::seccomp
