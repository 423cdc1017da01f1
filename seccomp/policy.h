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
  kUnixSocketDomain,     // socket(AF_UNIX, ...): socketpair stays allowed
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

// The groups added for a run without its own view (namespaces off or refused by the
// kernel), where nothing hides the user's sockets, System V IPC or files outside: the
// doors a view closes, shut by the filter instead (docs/isolation.md). Sorted likewise.
std::span<const SyscallGroup> NoViewPolicyGroups();

// The errno a denied call sees, or 0 for kKillProcess.
int ActionErrno(Action action);

}  // namespace skillmcp::seccomp
