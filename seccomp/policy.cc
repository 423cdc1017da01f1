// The syscall groups: data only. Every group says what it shuts and why its action.
#include "seccomp/policy.h"

#include <sys/socket.h>

#include <cerrno>

namespace skillmcp::seccomp {
namespace {

constexpr SyscallRule kClock[] = {
    {"adjtimex"},
    {"clock_adjtime"},
    {"clock_settime"},
    {"settimeofday"},
};

constexpr SyscallRule kCloneFallback[] = {{"clone3"}};

constexpr SyscallRule kCrossProcess[] = {
    {"kcmp"}, {"pidfd_getfd"}, {"process_vm_readv"}, {"process_vm_writev"}, {"ptrace"},
};

constexpr SyscallRule kFileHandles[] = {{"name_to_handle_at"}, {"open_by_handle_at"}};

constexpr SyscallRule kIoUring[] = {
    {"io_uring_enter"},
    {"io_uring_register"},
    {"io_uring_setup"},
};

constexpr SyscallRule kKernelSurface[] = {
    {"bpf"},
    {"perf_event_open"},
    {"userfaultfd"},
};

constexpr SyscallRule kKeyring[] = {{"add_key"}, {"keyctl"}, {"request_key"}};

constexpr SyscallRule kLandlock[] = {
    {"landlock_add_rule"},
    {"landlock_create_ruleset"},
    {"landlock_restrict_self"},
};

constexpr SyscallRule kMachine[] = {
    {"acct"},     {"ioperm"},      {"iopl"},   {"kexec_file_load"}, {"kexec_load"},
    {"quotactl"}, {"quotactl_fd"}, {"reboot"}, {"setdomainname"},   {"sethostname"},
    {"swapoff"},  {"swapon"},      {"syslog"},
};

constexpr SyscallRule kModules[] = {{"delete_module"}, {"finit_module"}, {"init_module"}};

constexpr SyscallRule kMount[] = {
    {"chroot"},        {"fsconfig"},   {"fsmount"},   {"fsopen"},     {"fspick"},  {"mount"},
    {"mount_setattr"}, {"move_mount"}, {"open_tree"}, {"pivot_root"}, {"umount2"},
};

constexpr SyscallRule kNamespaces[] = {
    {"clone", ArgFilter::kCloneNamespaceFlags},
    {"setns"},
    {"unshare"},
};

constexpr SyscallRule kObsolete[] = {
    {"_sysctl"}, {"lookup_dcookie"}, {"modify_ldt"}, {"nfsservctl"},
    {"sysfs"},   {"uselib"},         {"ustat"},      {"vhangup"},
};

constexpr SyscallRule kPersonality[] = {{"personality", ArgFilter::kPersonalityChange}};

constexpr SyscallRule kProcessGroup[] = {{"setpgid"}, {"setsid"}};

constexpr SyscallRule kSocketFamilies[] = {
    {"socket", ArgFilter::kSocketFamilyOutside},
    {"socketpair", ArgFilter::kSocketFamilyOutside},
};

constexpr int kAllowedSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

constexpr SyscallRule kTerminal[] = {{"ioctl", ArgFilter::kTerminalInjectIoctl}};

constexpr SyscallRule kFileMetadata[] = {
    {"chmod"},
    {"chown"},
    {"fchmod"},
    {"fchmodat"},
    {"fchmodat2"},
    {"fchown"},
    {"fchownat"},
    {"file_setattr", ArgFilter::kAny, 469},
    {"fremovexattr"},
    {"fsetxattr"},
    {"futimesat"},
    {"ioctl", ArgFilter::kInodeFlagsIoctl},
    {"lchown"},
    {"lremovexattr"},
    {"lsetxattr"},
    {"removexattr"},
    {"removexattrat", ArgFilter::kAny, 466},
    {"setxattr"},
    {"setxattrat", ArgFilter::kAny, 463},
    {"utime"},
    {"utimensat"},
    {"utimes"},
};

constexpr SyscallRule kHostIpc[] = {
    {"mq_getsetattr"}, {"mq_notify"}, {"mq_open"},  {"mq_timedreceive"}, {"mq_timedsend"},
    {"mq_unlink"},     {"msgctl"},    {"msgget"},   {"msgrcv"},          {"msgsnd"},
    {"semctl"},        {"semget"},    {"semop"},    {"semtimedop"},      {"shmat"},
    {"shmctl"},        {"shmdt"},     {"shmget"},
};

constexpr SyscallRule kInetSockets[] = {{"socket", ArgFilter::kInetSocketDomain}};

constexpr SyscallRule kUnixSockets[] = {
    {"socket", ArgFilter::kUnixSocketDomain},
    {"socketpair", ArgFilter::kUnixDatagramPair},
};

constexpr SyscallGroup kFileMetadataGroup = {
    "@file-metadata",
    "without a read-only view nothing else stops a run changing the mode, owner, times, "
    "inode flags or extended attributes of any file its uid owns or may write (Landlock "
    "has no right for them); EPERM everywhere, its own files included, as for a file of "
    "another owner",
    Action::kErrnoEperm, kFileMetadata};

constexpr SyscallGroup kHostIpcGroup = {
    "@host-ipc",
    "without an IPC namespace, System V shared memory, queues and semaphores and POSIX "
    "message queues are the host's: a run could reach others' or leave its own behind; "
    "EPERM, callers handle it",
    Action::kErrnoEperm, kHostIpc};

constexpr SyscallGroup kUnixSocketsGroup = {
    "@unix-sockets",
    "a run that could connect to any pathname or abstract socket its uid may reach (the "
    "session bus, agents, daemons, X11) makes none: socket(AF_UNIX) and a datagram "
    "socketpair, whose end can send to any path, are EPERM; a stream socketpair, node's own "
    "pipes, stays allowed",
    Action::kErrnoEperm, kUnixSockets};

constexpr SyscallGroup kInetGroups[] = {
    {"@inet-sockets",
     "a run kept off the network makes no IPv4 or IPv6 socket (stream, datagram or raw), so "
     "it neither connects, binds nor sends, whether Landlock can refuse TCP or not; EPERM, "
     "the refusal an unprivileged raw socket already gets",
     Action::kErrnoEperm, kInetSockets},
};

constexpr SyscallRule kMirrorEndpoints[] = {
    {"bind"}, {"connect"}, {"listen"}, {"socket"}, {"socketpair"},
};

constexpr SyscallRule kMirrorFastOpen[] = {
    {"sendmmsg"},
    {"sendmsg"},
    {"sendto", ArgFilter::kFastOpenSend},
};

constexpr SyscallGroup kMirrorGroups[] = {
    {"@io-uring",
     "io_uring's requests (socket, bind, connect, listen among them) are made where no "
     "filter sees them; EPERM, the mirror never sets one up",
     Action::kErrnoEperm, kIoUring},
    {"@network-endpoints",
     "a helper's socket dissolved with connect(AF_UNSPEC) and connected, bound or made to "
     "listen again reaches the helper's whole network, and a new socket is a new endpoint; "
     "EPERM, the mirror made all of its own before the fork",
     Action::kErrnoEperm, kMirrorEndpoints},
    {"@tcp-fast-open",
     "a send with MSG_FASTOPEN connects an unconnected TCP socket as connect would; EPERM "
     "for sendto with it, and for sendmsg and sendmmsg, which the mirror never makes",
     Action::kErrnoEperm, kMirrorFastOpen},
};

constexpr SyscallGroup kUnixGroups[] = {kUnixSocketsGroup};
constexpr SyscallGroup kNoViewGroups[] = {kFileMetadataGroup, kHostIpcGroup, kUnixSocketsGroup};

constexpr SyscallGroup kGroups[] = {
    {"@clock",
     "setting the system clock: never a script's business; EPERM is what a caller "
     "without CAP_SYS_TIME already gets",
     Action::kErrnoEperm, kClock},
    {"@clone3-fallback",
     "clone3 passes its flags in memory a filter cannot read; ENOSYS makes glibc fall "
     "back to clone(), whose flags @namespaces checks",
     Action::kErrnoEnosys, kCloneFallback},
    {"@cross-process",
     "reading or steering another process (memory, descriptors, tracing): the way a "
     "same-uid script would reach the broker's secrets; hostile, so the process dies",
     Action::kKillProcess, kCrossProcess},
    {"@file-handles",
     "opening files by handle bypasses path checks (the classic container escape); "
     "EPERM matches the missing CAP_DAC_READ_SEARCH",
     Action::kErrnoEperm, kFileHandles},
    {"@io-uring",
     "io_uring is a large kernel attack surface whose requests a filter cannot see; "
     "ENOSYS makes libuv fall back to its thread pool",
     Action::kErrnoEnosys, kIoUring},
    {"@kernel-surface",
     "eBPF, perf events and userfaultfd: kernel attack surface and exploit helpers "
     "(race widening) no script needs; EPERM as for an unprivileged caller",
     Action::kErrnoEperm, kKernelSurface},
    {"@keyring",
     "the kernel keyring is shared per uid and session and may hold other programs' "
     "secrets; EPERM, callers treat it as no keyring",
     Action::kErrnoEperm, kKeyring},
    {"@landlock",
     "the worker installed the run's Landlock domain before this filter; a script gains "
     "nothing from more domains but kernel surface; ENOSYS, as on a kernel without "
     "Landlock, which callers handle",
     Action::kErrnoEnosys, kLandlock},
    {"@machine",
     "whole-machine controls (reboot, kexec, swap, accounting, quotas, port I/O, host "
     "and domain names, the kernel log); EPERM as without the capability",
     Action::kErrnoEperm, kMachine},
    {"@modules", "loading or removing kernel modules; EPERM as without CAP_SYS_MODULE",
     Action::kErrnoEperm, kModules},
    {"@mount",
     "changing the filesystem view (old and new mount API, chroot, pivot_root); EPERM "
     "as without CAP_SYS_ADMIN",
     Action::kErrnoEperm, kMount},
    {"@namespaces",
     "new or joined namespaces (unshare, setns, clone with CLONE_NEW*): user namespaces "
     "hand out capabilities over new kernel surface; EPERM, callers handle it",
     Action::kErrnoEperm, kNamespaces},
    {"@obsolete",
     "old interfaces nothing current uses (modify_ldt, uselib, ustat, sysfs, ...): "
     "surface without users; ENOSYS as on a kernel built without them",
     Action::kErrnoEnosys, kObsolete},
    {"@personality",
     "personality flags such as ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC weaken the "
     "next exec's ASLR and W^X; only PER_LINUX and the query stay allowed",
     Action::kErrnoEperm, kPersonality},
    {"@process-group",
     "a process that leaves the run's process group (setsid, setpgid) escapes the group "
     "kill that ends a run; EPERM, as for a process already leading its group",
     Action::kErrnoEperm, kProcessGroup},
    {"@socket-families",
     "a family other than unix, IPv4, IPv6 and netlink reaches past the network fences "
     "(AF_SMC connects over TCP where Landlock does not look; AF_VSOCK reaches the "
     "hypervisor host from any network namespace) or into kernel surface no script needs; "
     "EPERM, as for a family the caller may not use",
     Action::kErrnoEperm, kSocketFamilies},
    {"@terminal-injection",
     "TIOCSTI/TIOCLINUX push input into a terminal the script shares with the user; "
     "EPERM",
     Action::kErrnoEperm, kTerminal},
};

}  // namespace

std::span<const SyscallGroup> WorkerPolicyGroups() { return kGroups; }

std::span<const SyscallGroup> MirrorPolicyGroups() { return kMirrorGroups; }

std::span<const SyscallGroup> UnixSocketGroups() { return kUnixGroups; }

std::span<const SyscallGroup> NoViewPolicyGroups() { return kNoViewGroups; }

std::span<const SyscallGroup> InetSocketGroups() { return kInetGroups; }

std::span<const int> AllowedSocketFamilies() { return kAllowedSocketFamilies; }

int ActionErrno(Action action) {
  switch (action) {
    case Action::kErrnoEnosys:
      return ENOSYS;
    case Action::kErrnoEperm:
      return EPERM;
    case Action::kKillProcess:
      return 0;
  }
  return 0;
}

}  // namespace skillmcp::seccomp
