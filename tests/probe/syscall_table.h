// The probe's syscall table, shared by the seccomp kernel test and the worker test:
// one row per syscall the worker policy must deny, and a few it must allow (so "denied"
// is never what every call answers). The probe (try_syscall.cc) knows each call name.
#pragma once

namespace skillmcp::probe {

struct SyscallRow {
  const char* call;      // a probe call name
  const char* expected;  // errno name, "ok", or "SIGSYS" (the process is killed)
};

inline constexpr SyscallRow kMustDeny[] = {
    {"ptrace", "SIGSYS"},
    {"process_vm_readv", "SIGSYS"},
    {"process_vm_writev", "SIGSYS"},
    {"pidfd_getfd", "SIGSYS"},
    {"kcmp", "SIGSYS"},
    {"perf_event_open", "EPERM"},
    {"bpf", "EPERM"},
    {"userfaultfd", "EPERM"},
    {"keyctl", "EPERM"},
    {"add_key", "EPERM"},
    {"request_key", "EPERM"},
    {"landlock_create_ruleset", "ENOSYS"},
    {"landlock_add_rule", "ENOSYS"},
    {"landlock_restrict_self", "ENOSYS"},
    {"io_uring_setup", "ENOSYS"},
    {"io_uring_enter", "ENOSYS"},
    {"io_uring_register", "ENOSYS"},
    {"socket_smc", "EPERM"},
    {"socket_vsock", "EPERM"},
    {"socket_unix_high", "EPERM"},
    {"unshare", "EPERM"},
    {"setns", "EPERM"},
    {"clone_newuser", "EPERM"},
    {"clone_newns_newpid", "EPERM"},
    {"clone3", "ENOSYS"},
    {"mount", "EPERM"},
    {"umount2", "EPERM"},
    {"fsopen", "EPERM"},
    {"fsconfig", "EPERM"},
    {"fsmount", "EPERM"},
    {"fspick", "EPERM"},
    {"move_mount", "EPERM"},
    {"open_tree", "EPERM"},
    {"mount_setattr", "EPERM"},
    {"pivot_root", "EPERM"},
    {"chroot", "EPERM"},
    {"init_module", "EPERM"},
    {"finit_module", "EPERM"},
    {"delete_module", "EPERM"},
    {"kexec_load", "EPERM"},
    {"kexec_file_load", "EPERM"},
    {"reboot", "EPERM"},
    {"swapon", "EPERM"},
    {"swapoff", "EPERM"},
    {"acct", "EPERM"},
    {"sethostname", "EPERM"},
    {"setdomainname", "EPERM"},
    {"settimeofday", "EPERM"},
    {"clock_settime", "EPERM"},
    {"clock_adjtime", "EPERM"},
    {"adjtimex", "EPERM"},
    {"iopl", "EPERM"},
    {"ioperm", "EPERM"},
    {"quotactl", "EPERM"},
    {"quotactl_fd", "EPERM"},
    {"syslog", "EPERM"},
    {"open_by_handle_at", "EPERM"},
    {"name_to_handle_at", "EPERM"},
    {"personality_no_aslr", "EPERM"},
    {"personality_no_aslr_high", "EPERM"},
    {"personality_bit31", "EPERM"},
    {"ioctl_tiocsti", "EPERM"},
    {"ioctl_tiocsti_high", "EPERM"},
    {"ioctl_tioclinux", "EPERM"},
    {"setsid_child", "EPERM"},
    {"setpgid_child", "EPERM"},
    {"modify_ldt", "ENOSYS"},
    {"ustat", "ENOSYS"},
    {"sysfs", "ENOSYS"},
    {"vhangup", "ENOSYS"},
    {"uselib", "ENOSYS"},
};

// What a run without its own view must also find shut (seccomp NoViewPolicyGroups), and,
// with kMustAllowWithoutView, what must stay open there. The same calls pass the policy
// of a run with a view: its view closes these doors instead.
inline constexpr SyscallRow kMustDenyWithoutView[] = {
    {"chmod", "EPERM"},          {"chown", "EPERM"},        {"fchmod", "EPERM"},
    {"fchmodat", "EPERM"},       {"fchmodat2", "EPERM"},    {"fchown", "EPERM"},
    {"fchownat", "EPERM"},       {"fremovexattr", "EPERM"}, {"fsetxattr", "EPERM"},
    {"futimesat", "EPERM"},      {"lchown", "EPERM"},       {"lremovexattr", "EPERM"},
    {"lsetxattr", "EPERM"},      {"removexattr", "EPERM"},  {"removexattrat", "EPERM"},
    {"setxattr", "EPERM"},       {"setxattrat", "EPERM"},   {"utime", "EPERM"},
    {"utimensat", "EPERM"},      {"utimes", "EPERM"},       {"msgctl", "EPERM"},
    {"msgget", "EPERM"},         {"msgrcv", "EPERM"},       {"msgsnd", "EPERM"},
    {"semctl", "EPERM"},         {"semget", "EPERM"},       {"semop", "EPERM"},
    {"semtimedop", "EPERM"},     {"shmat", "EPERM"},        {"shmctl", "EPERM"},
    {"shmdt", "EPERM"},          {"shmget", "EPERM"},       {"socket_unix", "EPERM"},
    {"socketpair_unix_dgram", "EPERM"},
    {"socketpair_unix_dgram_cloexec", "EPERM"},
    {"ioctl_setflags", "EPERM"},
    {"ioctl_setflags32", "EPERM"},
    {"ioctl_fssetxattr", "EPERM"},
    {"file_setattr", "EPERM"},
    {"mq_getsetattr", "EPERM"},
    {"mq_notify", "EPERM"},
    {"mq_open", "EPERM"},
    {"mq_timedreceive", "EPERM"},
    {"mq_timedsend", "EPERM"},
    {"mq_unlink", "EPERM"},
};

// The unix socket group alone (a closed view without Landlock ABI 6): these are refused,
// while the metadata and IPC rows of kMustDenyWithoutView pass.
inline constexpr const char* kUnixSocketCalls[] = {
    "socket_unix", "socketpair_unix_dgram", "socketpair_unix_dgram_cloexec"};

inline constexpr SyscallRow kMustAllowWithoutView[] = {
    {"socketpair_unix", "ok"},
    {"socketpair_unix_seqpacket", "ok"},
    {"ioctl_tiocgwinsz", "EBADF"},
    {"socket_inet", "ok"},
    {"getpid", "ok"},
};

inline constexpr SyscallRow kMustAllow[] = {
    {"getpid", "ok"},
    {"read", "EBADF"},
    {"openat", "EFAULT"},
    {"ioctl_tiocgwinsz", "EBADF"},
    {"personality_query", "ok"},
    {"personality_linux", "ok"},
    {"clone_plain", "ok"},
};

}  // namespace skillmcp::probe
