// try_syscall: a probe the worker tests exec through the real skill-mcp-worker.
// Built WITHOUT sanitizers (they would intercept or add syscalls of their own).
//
//   try_syscall call NAME...   for each NAME: call it once with harmless or invalid
//                              arguments, print "NAME <errno name>" ("NAME ok" when it
//                              returned >= 0). Allowed calls show EFAULT/EBADF/EINVAL...;
//                              denied ones show the filter's errno or die by SIGSYS.
//   try_syscall status         /proc/self/status identity fields, rlimits, open fds, cwd
//   try_syscall env            the environment, one entry a line
//   try_syscall dgram PATH     one datagram from a socketpair end to PATH: "dgram sent|<errno>"
//   try_syscall dgram-listen PATH  a datagram socket at PATH (0777): "ready", then each message
//   try_syscall create PATH... creates each for writing: "PATH ok" or "PATH <errno name>"
//   try_syscall xattr PATH...  sets user.skillmcp on each: "PATH ok" or "PATH <errno name>"
//   try_syscall sysv           leaves a System V segment behind: "shm <id>" or "shm <errno>"
//   try_syscall int80          getpid through the i386 ABI (int 0x80)
//   try_syscall x32            getpid through the x32 ABI number
//   try_syscall clone-newuser  clone(CLONE_NEWUSER|SIGCHLD), reaps the child
//   try_syscall forkbomb       forks until refused, prints "forked N errno E"
//   try_syscall membomb MiB    mallocs and touches 1 MiB blocks up to MiB, prints the count
//   try_syscall write FILE MiB writes MiB MiB to FILE, prints "wrote N" or the errno
//   try_syscall spin           burns CPU forever
//   try_syscall setuid0        setresuid(0,0,0) and setresgid(0,0,0), prints the errnos
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

extern char** environ;

namespace {

void* const kBad = reinterpret_cast<void*>(1);  // an unmapped address: EFAULT if reached

struct Call {
  const char* name;
  long (*invoke)();
};

long S(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  return syscall(nr, a, b, c, d, e, f);
}
long B() { return reinterpret_cast<long>(kBad); }

// Runs `call` in a forked child; its errno (0: success) comes back as the exit code.
long InChild(long (*call)()) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(call() >= 0 ? 0 : errno);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    errno = ECHILD;
    return -1;
  }
  errno = WEXITSTATUS(status);
  return errno == 0 ? 0 : -1;
}

// Every call must be harmless even if allowed and even as root with all capabilities.
const Call kCalls[] = {
    {"acct", [] { return S(SYS_acct, B()); }},
    {"add_key", [] { return S(SYS_add_key, B(), B(), 0, 0, 0); }},
    {"adjtimex", [] { return S(SYS_adjtimex, B()); }},
    {"bpf", [] { return S(SYS_bpf, -1, 0, 0); }},
    {"chroot", [] { return S(SYS_chroot, B()); }},
    {"clock_adjtime", [] { return S(SYS_clock_adjtime, CLOCK_REALTIME, B()); }},
    {"clock_settime", [] { return S(SYS_clock_settime, CLOCK_REALTIME, B()); }},
    {"clone3", [] { return S(SYS_clone3, 0, 0); }},
    {"delete_module", [] { return S(SYS_delete_module, B(), 0); }},
    {"finit_module", [] { return S(SYS_finit_module, -1, B(), 0); }},
    {"fsconfig", [] { return S(SYS_fsconfig, -1, 0, 0, 0, 0); }},
    {"fsmount", [] { return S(SYS_fsmount, -1, 0, 0); }},
    {"fsopen", [] { return S(SYS_fsopen, B(), 0); }},
    {"fspick", [] { return S(SYS_fspick, -1, B(), 0); }},
    {"init_module", [] { return S(SYS_init_module, B(), 16, B()); }},
    {"io_uring_enter", [] { return S(SYS_io_uring_enter, -1, 0, 0, 0, 0, 0); }},
    {"io_uring_register", [] { return S(SYS_io_uring_register, -1, 0, 0, 0); }},
    {"io_uring_setup", [] { return S(SYS_io_uring_setup, 1, B()); }},
    {"ioctl_tiocgwinsz", [] { return S(SYS_ioctl, -1, TIOCGWINSZ, 0); }},
    {"ioctl_tiocsti", [] { return S(SYS_ioctl, -1, TIOCSTI, 0); }},
    {"ioctl_tiocsti_high", [] { return S(SYS_ioctl, -1, (1L << 32) | TIOCSTI, 0); }},
    {"ioctl_tioclinux", [] { return S(SYS_ioctl, -1, TIOCLINUX, 0); }},
    {"ioperm", [] { return S(SYS_ioperm, ~0L, 1, 1); }},
    {"iopl", [] { return S(SYS_iopl, 4); }},
    {"kcmp", [] { return S(SYS_kcmp, getpid(), getpid(), 99, 0, 0); }},
    {"kexec_file_load", [] { return S(SYS_kexec_file_load, -1, -1, 0, 0, 0xffff0000L); }},
    {"kexec_load", [] { return S(SYS_kexec_load, 0, 0, 0, 0xffff0000L); }},
    {"keyctl", [] { return S(SYS_keyctl, -1, 0, 0, 0, 0); }},
    // The version query succeeds wherever the kernel has Landlock; the others answer EBADF.
    {"landlock_add_rule", [] { return S(SYS_landlock_add_rule, -1, 1, B(), 0); }},
    {"landlock_create_ruleset", [] { return S(SYS_landlock_create_ruleset, 0, 0, 1); }},
    {"landlock_restrict_self", [] { return S(SYS_landlock_restrict_self, -1, 0); }},
    {"mount", [] { return S(SYS_mount, B(), B(), B(), 0, 0); }},
    {"mount_setattr", [] { return S(SYS_mount_setattr, -1, B(), 0, B(), 0); }},
    {"move_mount", [] { return S(SYS_move_mount, -1, B(), -1, B(), 0); }},
    {"name_to_handle_at", [] { return S(SYS_name_to_handle_at, -1, B(), B(), B(), 0); }},
    {"open_by_handle_at", [] { return S(SYS_open_by_handle_at, -1, B(), 0); }},
    {"open_tree", [] { return S(SYS_open_tree, -1, B(), 0); }},
    {"perf_event_open", [] { return S(SYS_perf_event_open, B(), 0, -1, -1, 0); }},
    {"personality_query", [] { return S(SYS_personality, 0xffffffffL); }},
    {"personality_linux", [] { return S(SYS_personality, 0); }},
    {"personality_no_aslr", [] { return S(SYS_personality, 0x0040000); }},
    {"personality_no_aslr_high", [] { return S(SYS_personality, (1L << 32) | 0x0040000); }},
    {"personality_bit31", [] { return S(SYS_personality, 0x80040000L); }},
    {"pidfd_getfd", [] { return S(SYS_pidfd_getfd, -1, 0, 0); }},
    {"pivot_root", [] { return S(SYS_pivot_root, B(), B()); }},
    {"process_vm_readv", [] { return S(SYS_process_vm_readv, 0, B(), 1, B(), 1, 0); }},
    {"process_vm_writev", [] { return S(SYS_process_vm_writev, 0, B(), 1, B(), 1, 0); }},
    {"ptrace", [] { return S(SYS_ptrace, 0x7fff, 0, 0, 0); }},
    {"quotactl", [] { return S(SYS_quotactl, 0, B(), 0, B()); }},
    {"quotactl_fd", [] { return S(SYS_quotactl_fd, -1, 0, 0, B()); }},
    {"reboot", [] { return S(SYS_reboot, 0, 0, 0, 0); }},
    {"request_key", [] { return S(SYS_request_key, B(), B(), B(), 0); }},
    {"setns", [] { return S(SYS_setns, -1, 0); }},
    {"setdomainname", [] { return S(SYS_setdomainname, B(), 1); }},
    {"sethostname", [] { return S(SYS_sethostname, B(), 1); }},
    {"settimeofday", [] { return S(SYS_settimeofday, B(), 0); }},
    {"swapoff", [] { return S(SYS_swapoff, B()); }},
    {"swapon", [] { return S(SYS_swapon, B(), 0); }},
    {"syslog", [] { return S(SYS_syslog, 3, 0, -1); }},
    {"umount2", [] { return S(SYS_umount2, B(), 0); }},
    {"unshare", [] { return S(SYS_unshare, 0x1); }},
    {"userfaultfd", [] { return S(SYS_userfaultfd, ~0L); }},
    {"modify_ldt", [] { return S(SYS_modify_ldt, 0, B(), 16); }},
    {"ustat", [] { return S(SYS_ustat, 0, B()); }},
    {"sysfs", [] { return S(SYS_sysfs, 99, 0, 0); }},
    {"vhangup", [] { return S(SYS_vhangup); }},
    {"uselib", [] { return S(SYS_uselib, B()); }},
    // The doors a run without its own view must find shut (NoViewPolicyGroups).
    {"chmod", [] { return S(SYS_chmod, B(), 0); }},
    {"chown", [] { return S(SYS_chown, B(), 0, 0); }},
    {"fchmod", [] { return S(SYS_fchmod, -1, 0); }},
    {"fchmodat", [] { return S(SYS_fchmodat, -1, B(), 0); }},
    {"fchmodat2", [] { return S(452, -1, B(), 0, 0); }},
    {"fchown", [] { return S(SYS_fchown, -1, 0, 0); }},
    {"fchownat", [] { return S(SYS_fchownat, -1, B(), 0, 0, 0); }},
    {"fremovexattr", [] { return S(SYS_fremovexattr, -1, B()); }},
    {"fsetxattr", [] { return S(SYS_fsetxattr, -1, B(), 0, 0, 0); }},
    {"futimesat", [] { return S(SYS_futimesat, -1, B(), 0); }},
    {"lchown", [] { return S(SYS_lchown, B(), 0, 0); }},
    {"lremovexattr", [] { return S(SYS_lremovexattr, B(), B()); }},
    {"lsetxattr", [] { return S(SYS_lsetxattr, B(), B(), 0, 0, 0); }},
    {"removexattr", [] { return S(SYS_removexattr, B(), B()); }},
    {"removexattrat", [] { return S(466, -1, B(), 0, B()); }},
    {"setxattr", [] { return S(SYS_setxattr, B(), B(), 0, 0, 0); }},
    {"setxattrat", [] { return S(463, -1, B(), 0, B(), B(), 32); }},
    {"utime", [] { return S(SYS_utime, B(), 0); }},
    {"utimensat", [] { return S(SYS_utimensat, -1, B(), 0, 0); }},
    {"utimes", [] { return S(SYS_utimes, B(), 0); }},
    {"msgctl", [] { return S(SYS_msgctl, -1, 2 /*IPC_STAT*/, B()); }},
    {"msgget", [] { return S(SYS_msgget, 0x5eed1234, 0); }},
    {"msgrcv", [] { return S(SYS_msgrcv, -1, B(), 0, 0, 0); }},
    {"msgsnd", [] { return S(SYS_msgsnd, -1, B(), 0, 0); }},
    {"semctl", [] { return S(SYS_semctl, -1, 0, 2 /*IPC_STAT*/, B()); }},
    {"semget", [] { return S(SYS_semget, 0x5eed1234, 1, 0); }},
    {"semop", [] { return S(SYS_semop, -1, B(), 1); }},
    {"semtimedop", [] { return S(SYS_semtimedop, -1, B(), 1, 0); }},
    {"shmat", [] { return S(SYS_shmat, -1, 0, 0); }},
    {"shmctl", [] { return S(SYS_shmctl, -1, 2 /*IPC_STAT*/, B()); }},
    {"shmdt", [] { return S(SYS_shmdt, B()); }},
    {"shmget", [] { return S(SYS_shmget, 0x5eed1234, 0, 0); }},
    {"socket_unix", [] { return S(SYS_socket, AF_UNIX, SOCK_STREAM, 0); }},
    {"socket_unix_high", [] { return S(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0); }},
    {"socket_inet", [] { return S(SYS_socket, AF_INET, SOCK_STREAM, 0); }},
    {"socket_smc", [] { return S(SYS_socket, 43 /*AF_SMC*/, SOCK_STREAM, 0); }},
    {"socket_vsock", [] { return S(SYS_socket, AF_VSOCK, SOCK_STREAM, 0); }},
    {"socketpair_unix_dgram", [] {
       int sv[2];
       return S(SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, reinterpret_cast<long>(sv));
     }},
    {"socketpair_unix_dgram_cloexec", [] {
       int sv[2];
       return S(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, reinterpret_cast<long>(sv));
     }},
    {"socketpair_unix_seqpacket", [] {
       int sv[2];
       return S(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET, 0, reinterpret_cast<long>(sv));
     }},
    {"ioctl_setflags", [] { return S(SYS_ioctl, -1, FS_IOC_SETFLAGS, 0); }},
    {"ioctl_setflags32", [] { return S(SYS_ioctl, -1, FS_IOC32_SETFLAGS, 0); }},
    {"ioctl_fssetxattr", [] { return S(SYS_ioctl, -1, FS_IOC_FSSETXATTR, 0); }},
    {"file_setattr", [] { return S(469, -1, B(), B(), 0, 0); }},
    {"mq_getsetattr", [] { return S(SYS_mq_getsetattr, -1, 0, 0); }},
    {"mq_notify", [] { return S(SYS_mq_notify, -1, 0); }},
    {"mq_open", [] { return S(SYS_mq_open, B(), 0, 0, 0); }},
    {"mq_timedreceive", [] { return S(SYS_mq_timedreceive, -1, B(), 0, 0, 0); }},
    {"mq_timedsend", [] { return S(SYS_mq_timedsend, -1, B(), 0, 0, 0); }},
    {"mq_unlink", [] { return S(SYS_mq_unlink, B()); }},
    {"socketpair_unix", [] {
       int sv[2];
       return S(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, reinterpret_cast<long>(sv));
     }},
    // Allowed ones, for contrast.
    {"getpid", [] { return S(SYS_getpid); }},
    {"openat", [] { return S(SYS_openat, -1, B(), 0); }},
    {"read", [] { return S(SYS_read, -1, 0, 0); }},
    {"clone_plain",
     [] {
       // fork through clone() with no namespace flag: must work.
       long pid = S(SYS_clone, SIGCHLD, 0, 0, 0, 0);
       if (pid == 0) _exit(0);
       if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
       return pid < 0 ? -1L : 0L;
     }},
    {"clone_newuser",
     [] {
       long pid = S(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
       if (pid == 0) _exit(0);
       if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
       return pid < 0 ? -1L : 0L;
     }},
    // Leaving the process group, tried in a fresh child: the probe itself already leads
    // a session, where the kernel alone would answer EPERM.
    {"setsid_child", [] { return InChild([] { return S(SYS_setsid); }); }},
    {"setpgid_child", [] { return InChild([] { return S(SYS_setpgid, 0, 0); }); }},
    {"clone_newns_newpid",
     [] {
       long pid = S(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
       if (pid == 0) _exit(0);
       if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
       return pid < 0 ? -1L : 0L;
     }},
};

int CallByName(std::string_view name) {
  for (const Call& c : kCalls) {
    if (name != c.name) continue;
    errno = 0;
    const long rc = c.invoke();
    if (rc >= 0) {
      std::printf("%s ok\n", c.name);
    } else {
      const char* en = strerrorname_np(errno);
      std::printf("%s %s\n", c.name, en ? en : "E?");
    }
    std::fflush(stdout);
    return 0;
  }
  std::printf("%s unknown\n", std::string(name).c_str());
  return 2;
}

void PrintStatus() {
  {
    std::ifstream in("/proc/self/status");  // closed before the descriptor listing below
    std::string line;
    const char* keys[] = {"Uid:",    "Gid:",    "Groups:",     "CapInh:",  "CapPrm:", "CapEff:",
                          "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "SigBlk:", "SigIgn:"};
    while (std::getline(in, line))
      for (const char* k : keys)
        if (line.rfind(k, 0) == 0) std::cout << line << "\n";
  }
  const struct {
    const char* name;
    int res;
  } limits[] = {{"NPROC", RLIMIT_NPROC}, {"AS", RLIMIT_AS},       {"DATA", RLIMIT_DATA},
                {"CPU", RLIMIT_CPU},     {"FSIZE", RLIMIT_FSIZE}, {"NOFILE", RLIMIT_NOFILE},
                {"CORE", RLIMIT_CORE}};
  for (const auto& l : limits) {
    struct rlimit r;
    getrlimit(l.res, &r);
    auto v = [](rlim_t x) {
      return x == RLIM_INFINITY ? std::string("unlimited") : std::to_string(x);
    };
    std::cout << "RLIMIT_" << l.name << ": " << v(r.rlim_cur) << " " << v(r.rlim_max) << "\n";
  }
  std::cout << "Securebits: 0x" << std::hex << prctl(PR_GET_SECUREBITS, 0, 0, 0, 0) << std::dec
            << "\n";
  std::cout << "Fds:";
  if (DIR* d = opendir("/proc/self/fd")) {
    const int self = dirfd(d);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (std::atoi(e->d_name) == self) continue;
      std::cout << " " << e->d_name;
    }
    closedir(d);
  }
  std::cout << "\n";
  char cwd[4096];
  std::cout << "Cwd: " << (getcwd(cwd, sizeof(cwd)) ? cwd : "?") << "\n";
  std::cout << "Sid: " << (getsid(0) == getpid() ? "leader" : "member") << "\n";
  std::cout << "Pgid: " << (getpgrp() == getpid() ? "leader" : "member") << "\n";
}

int Int80() {
  long ret = 20;  // __NR_getpid in the i386 table
  asm volatile("int $0x80" : "+a"(ret) : : "memory");
  std::printf("int80 returned %ld\n", ret);
  return 0;
}

int X32() {
  const long ret = syscall(0x40000000L | SYS_getpid);
  std::printf("x32 returned %ld errno %s\n", ret, ret < 0 ? strerrorname_np(errno) : "0");
  return 0;
}

int ForkBomb() {
  int count = 0;
  for (;;) {
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the children go when the probe does
      pause();
      _exit(0);
    }
    if (pid < 0) {
      std::printf("forked %d errno %s\n", count, strerrorname_np(errno));
      std::fflush(stdout);
      kill(0, SIGKILL);  // the whole group, the probe included
      return 0;
    }
    if (++count >= 100000) break;
  }
  std::printf("forked %d without refusal\n", count);
  std::fflush(stdout);
  kill(0, SIGKILL);
  return 1;
}

int MemBomb(long mib) {
  long got = 0;
  for (; got < mib; ++got) {
    char* p = static_cast<char*>(std::malloc(1 << 20));
    if (p == nullptr) break;
    std::memset(p, 1, 1 << 20);
  }
  std::printf("allocated %ld MiB\n", got);
  return got < mib ? 3 : 0;
}

int WriteFile(const char* path, long mib) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::printf("open %s\n", strerrorname_np(errno));
    return 1;
  }
  static char block[1 << 20];
  long wrote = 0;
  for (; wrote < mib; ++wrote) {
    if (write(fd, block, sizeof(block)) != static_cast<ssize_t>(sizeof(block))) {
      std::printf("stopped at %ld MiB errno %s\n", wrote, strerrorname_np(errno));
      close(fd);
      return 3;
    }
  }
  close(fd);
  std::printf("wrote %ld MiB\n", wrote);
  return 0;
}

int SetUid0() {
  const int u = setresuid(0, 0, 0) == 0 ? 0 : errno;
  const int g = setresgid(0, 0, 0) == 0 ? 0 : errno;
  std::printf("setresuid %s setresgid %s\n", u ? strerrorname_np(u) : "ok",
              g ? strerrorname_np(g) : "ok");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Exec'd by the worker in node's place, with node's argv: node -e <bootstrap> -- <script>
  // <args...>, or node --preserve-symlinks-main /proc/self/fd/8 <script> <args...>
  // (worker/exec.h). The mode is the first argument after the script path; argv[0]
  // becomes the script path.
  if (argc > 4 && std::string_view(argv[1]) == "-e" && std::string_view(argv[3]) == "--") {
    argv += 4;
    argc -= 4;
  } else if (argc > 3 && std::string_view(argv[1]) == "--preserve-symlinks-main") {
    argv += 3;
    argc -= 3;
  }
  if (argc < 2) return 2;
  const std::string_view mode = argv[1];
  if (mode == "call") {
    int rc = 0;
    for (int i = 2; i < argc; ++i) rc |= CallByName(argv[i]);
    return rc;
  }
  if (mode == "status") {
    PrintStatus();
    return 0;
  }
  if (mode == "sigparent") {  // may this process signal its parent (signal 0: no effect)?
    const int err = kill(getppid(), 0) == 0 ? 0 : errno;
    std::printf("kill parent %s\n", err ? strerrorname_np(err) : "ok");
    return 0;
  }
  if (mode == "open") {  // each path: "<path> ok" or "<path> <errno name>"
    for (int i = 2; i < argc; ++i) {
      const int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
      std::printf("%s %s\n", argv[i], fd >= 0 ? "ok" : strerrorname_np(errno));
      if (fd >= 0) close(fd);
    }
    return 0;
  }
  if (mode == "create") {  // each path: "<path> ok" or the errno of creating it for writing
    for (int i = 2; i < argc; ++i) {
      const int fd = open(argv[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      std::printf("%s %s\n", argv[i], fd >= 0 ? "ok" : strerrorname_np(errno));
      if (fd >= 0) close(fd);
    }
    return 0;
  }
  if (mode == "dgram") {  // sends one datagram to the socket at PATH: "sent" or the errno
    int sv[2];
    const char* what = "sent";
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) {
      what = strerrorname_np(errno);
    } else {
      sockaddr_un to{};
      to.sun_family = AF_UNIX;
      std::strncpy(to.sun_path, argv[2], sizeof to.sun_path - 1);
      if (sendto(sv[0], "from a run", 10, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
        what = strerrorname_np(errno);
    }
    std::printf("dgram %s\n", what);
    return 0;
  }
  if (mode == "dgram-listen" && argc > 2) {  // binds PATH (mode 0777), prints "ready", then
                                             // each datagram it receives, one a line
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    std::strncpy(at.sun_path, argv[2], sizeof at.sun_path - 1);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
        chmod(argv[2], 0777) != 0) {
      std::printf("%s\n", strerrorname_np(errno));
      return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    char buf[256];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) >= 0;) {
      std::printf("%.*s\n", static_cast<int>(n), buf);
      std::fflush(stdout);
    }
    return 0;
  }
  if (mode == "xattr") {  // each path: "<path> ok" or the errno of setting user.skillmcp
    for (int i = 2; i < argc; ++i) {
      const int rc = setxattr(argv[i], "user.skillmcp", "set by a run", 12, 0);
      std::printf("%s %s\n", argv[i], rc == 0 ? "ok" : strerrorname_np(errno));
    }
    return 0;
  }
  if (mode == "sysv") {  // a System V segment made and left behind: "shm <id>" or the errno
    const int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    if (id >= 0) {
      std::printf("shm %d\n", id);
    } else {
      std::printf("shm %s\n", strerrorname_np(errno));
    }
    return 0;
  }
  if (mode == "env") {
    for (char** e = environ; *e; ++e) std::printf("%s\n", *e);
    return 0;
  }
  if (mode == "int80") return Int80();
  if (mode == "x32") return X32();
  if (mode == "forkbomb") return ForkBomb();
  if (mode == "membomb" && argc > 2) return MemBomb(std::atol(argv[2]));
  if (mode == "write" && argc > 3) return WriteFile(argv[2], std::atol(argv[3]));
  if (mode == "spin") {
    for (;;) asm volatile("" ::: "memory");
  }
  if (mode == "setuid0") return SetUid0();
  if (mode == "orphan" || mode == "orphan-out") {
    // Leaves a child behind (same command line, so a test finds it by its arguments)
    // with no descriptor of the run's (orphan-out: its stdout only), in a session of its
    // own where the policy allows (so no group kill reaches it), and exits at once: the
    // run's first process is gone.
    int ready[2];
    if (pipe(ready) != 0) return 3;
    const pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) {
      setsid();
      for (int fd = 0; fd < 3; ++fd)
        if (fd != 1 || mode != "orphan-out") close(fd);
      close(ready[1]);  // the parent exits only once the child has left the group
      sleep(60);
      _exit(0);
    }
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1);
    return 0;
  }
  if (mode == "args") {
    for (int i = 0; i < argc; ++i) std::printf("[%s]\n", argv[i]);
    return 0;
  }
  return 2;
}
