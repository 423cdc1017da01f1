// Turns the group table into a libseccomp filter and exports its BPF program. Runs in
// the broker once at boot; the workers only load the bytes (seccomp/load.cc).
#include "seccomp/compile.h"

#include <linux/fs.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "seccomp/load.h"
#include "seccomp/policy.h"
#include "shared/unique_fd.h"

namespace skillmcp::seccomp {
namespace {

struct CtxRelease {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxRelease>;

uint32_t ToScmp(Action action) {
  // The errno actions take the one mapping the tests read too (ActionErrno).
  if (action == Action::kKillProcess) return SCMP_ACT_KILL_PROCESS;
  const int err = ActionErrno(action);
  return err != 0 ? SCMP_ACT_ERRNO(err) : SCMP_ACT_KILL_PROCESS;  // 0: fail closed
}

// Every namespace flag clone() accepts. CLONE_NEWTIME is left out on purpose: in
// clone()'s flags 0x80 is part of the exit signal (CSIGNAL), and the kernel only
// accepts CLONE_NEWTIME through unshare/clone3, both shut elsewhere.
constexpr uint64_t kCloneNamespaceFlags[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
};

int AddClone(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // One rule per flag: libseccomp allows one comparison per argument in a rule, and
  // "any of these bits set" is the OR of "this bit set".
  for (uint64_t flag : kCloneNamespaceFlags) {
    int rc = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc < 0) return rc;
  }
  return 0;
}

int AddPersonality(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // The kernel reads the argument as an unsigned int, so only the low 32 bits count.
  // Allowed: exactly 0 (PER_LINUX) and 0xffffffff (query). Every other value either
  // has bit 31 clear and some bit b set, or bit 31 set and some bit b clear; one rule
  // per (b, case) covers them all with a single masked comparison each.
  constexpr uint64_t kBit31 = 0x80000000u;
  for (int b = 0; b < 31; ++b) {
    const uint64_t bit = uint64_t{1} << b;
    int rc =
        seccomp_rule_add(ctx, action, nr, 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, bit | kBit31, bit));
    if (rc < 0) return rc;
    rc = seccomp_rule_add(ctx, action, nr, 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, bit | kBit31, kBit31));
    if (rc < 0) return rc;
  }
  return 0;
}

// Rules matching argument `arg` equal to any of `values` in its low 32 bits: for an
// argument the kernel reads as an int, which junk in the high half must not slip past.
int AddLow32Equals(scmp_filter_ctx ctx, int nr, uint32_t action, unsigned arg,
                   std::initializer_list<uint64_t> values) {
  for (uint64_t value : values) {
    int rc =
        seccomp_rule_add(ctx, action, nr, 1, SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, value));
    if (rc < 0) return rc;
  }
  return 0;
}

int AddTerminalIoctl(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // ioctl's request is an unsigned int in the kernel.
  return AddLow32Equals(ctx, nr, action, 1, {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}});
}

int AddUnixSocket(scmp_filter_ctx ctx, int nr, uint32_t action) {
  return AddLow32Equals(ctx, nr, action, 0, {uint64_t{AF_UNIX}});  // the domain is an int
}

int AddInetSocket(scmp_filter_ctx ctx, int nr, uint32_t action) {
  return AddLow32Equals(ctx, nr, action, 0, {uint64_t{AF_INET}, uint64_t{AF_INET6}});
}

// Rules matching argument `arg`, as a whole 64-bit value, outside `allowed` (ascending):
// each gap below the last allowed value as aligned power-of-two blocks, one masked
// comparison each (libseccomp takes one comparison per argument in a rule, so no range),
// and one GE for everything above. An int with junk in the high half lands above, so it
// is refused even where its low 32 bits name an allowed family: fail closed.
int AddOutside(scmp_filter_ctx ctx, int nr, uint32_t action, unsigned arg,
               std::span<const int> allowed) {
  uint64_t lo = 0;
  for (int value : allowed) {
    const auto end = static_cast<uint64_t>(value);
    if (end < lo) return -EINVAL;  // not ascending: fail closed
    while (lo < end) {
      uint64_t size = lo == 0 ? uint64_t{1} << 63 : lo & (~lo + 1);  // lo's alignment
      while (size > end - lo) size >>= 1;
      int rc =
          seccomp_rule_add(ctx, action, nr, 1, SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, ~(size - 1), lo));
      if (rc < 0) return rc;
      lo += size;
    }
    lo = end + 1;
  }
  return seccomp_rule_add(ctx, action, nr, 1, SCMP_CMP(arg, SCMP_CMP_GE, lo));
}

int AddUnixDatagramPair(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // The type's low four bits (SOCK_TYPE_MASK) name it; the rest are SOCK_NONBLOCK and
  // SOCK_CLOEXEC, which must not let a datagram pair through.
  return seccomp_rule_add(ctx, action, nr, 2,
                          SCMP_A0_64(SCMP_CMP_MASKED_EQ, 0xffffffffu, uint64_t{AF_UNIX}),
                          SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xfu, uint64_t{SOCK_DGRAM}));
}

int AddFastOpenSend(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // sendto's flags (its fourth argument) are an int.
  return seccomp_rule_add(ctx, action, nr, 1,
                          SCMP_A3_64(SCMP_CMP_MASKED_EQ, uint64_t{MSG_FASTOPEN}, MSG_FASTOPEN));
}

int AddInodeFlagsIoctl(scmp_filter_ctx ctx, int nr, uint32_t action) {
  // chattr's requests.
  return AddLow32Equals(
      ctx, nr, action, 1,
      {uint64_t{FS_IOC_SETFLAGS}, uint64_t{FS_IOC32_SETFLAGS}, uint64_t{FS_IOC_FSSETXATTR}});
}

int AddRule(scmp_filter_ctx ctx, const SyscallRule& rule, uint32_t action) {
  const std::string name(rule.name);
  int nr = seccomp_syscall_resolve_name(name.c_str());
  if (nr == __NR_SCMP_ERROR) nr = rule.number;
  if (nr < 0) return -ENOENT;  // a table name libseccomp does not know: fail closed
  switch (rule.filter) {
    case ArgFilter::kAny:
      return seccomp_rule_add(ctx, action, nr, 0);
    case ArgFilter::kCloneNamespaceFlags:
      return AddClone(ctx, nr, action);
    case ArgFilter::kPersonalityChange:
      return AddPersonality(ctx, nr, action);
    case ArgFilter::kTerminalInjectIoctl:
      return AddTerminalIoctl(ctx, nr, action);
    case ArgFilter::kUnixSocketDomain:
      return AddUnixSocket(ctx, nr, action);
    case ArgFilter::kUnixDatagramPair:
      return AddUnixDatagramPair(ctx, nr, action);
    case ArgFilter::kInodeFlagsIoctl:
      return AddInodeFlagsIoctl(ctx, nr, action);
    case ArgFilter::kInetSocketDomain:
      return AddInetSocket(ctx, nr, action);
    case ArgFilter::kSocketFamilyOutside:
      return AddOutside(ctx, nr, action, 0, AllowedSocketFamilies());  // the domain
    case ArgFilter::kFastOpenSend:
      return AddFastOpenSend(ctx, nr, action);
  }
  return -EINVAL;
}

int AddGroups(scmp_filter_ctx ctx, std::span<const SyscallGroup> groups) {
  for (const SyscallGroup& group : groups) {
    const uint32_t action = ToScmp(group.action);
    for (const SyscallRule& rule : group.rules) {
      if (int rc = AddRule(ctx, rule, action); rc < 0) return rc;
    }
  }
  return 0;
}

// The fixed prefix and suffix around `groups`, exported as a classic BPF program.
int Compile(std::initializer_list<std::span<const SyscallGroup>> groups, std::string* bpf) {
  // Fixed suffix: default ALLOW (see policy.h for why a deny-list).
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return -ENOMEM;
  // Fixed prefix: the filter covers the native architecture only (seccomp_init adds
  // just that one), and a syscall from any other ABI (int 0x80 on x86_64, x32 numbers)
  // kills the process, because the deny rules below are numbered for the native ABI
  // and would not match there.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return rc;
  // no_new_privs is the worker's own, checked step; libseccomp must not hide its absence.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  if (rc < 0) return rc;
  // The kernel's own errno (EACCES, EINVAL, ...) rather than libseccomp's -ECANCELED,
  // so the broker's report names the real cause.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_API_SYSRAWRC, 1);
  if (rc < 0) return rc;
  // The rules as a binary tree over the syscall number rather than a linear list: the
  // same decisions, but the kernel converts, JIT-compiles and caches a shallower program
  // when the filter is installed, on every run's path just before node's exec (about
  // 190 -> 125 us a load on a small virtual machine).
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0) return rc;
  for (std::span<const SyscallGroup> g : groups) {
    rc = AddGroups(ctx.get(), g);
    if (rc < 0) return rc;
  }
  // libseccomp 2.5 exports to a descriptor only: a memfd, read back whole.
  UniqueFd mem(memfd_create("skill-mcp-seccomp", MFD_CLOEXEC));
  if (!mem.valid()) return -errno;
  rc = seccomp_export_bpf(ctx.get(), mem.get());
  if (rc < 0) return rc;
  std::string out;
  char buf[4096];
  for (off_t off = 0;;) {
    ssize_t n = pread(mem.get(), buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
    if (out.size() > kBpfMaxInsns * kBpfInsnBytes) return -E2BIG;
  }
  if (!IsPlausibleBpf(out)) return -EINVAL;
  *bpf = std::move(out);
  return 0;
}

}  // namespace

int CompileWorkerPolicy(std::string* bpf, DoorFence fence, bool inet_fence) {
  const std::span<const SyscallGroup> none;
  const std::span<const SyscallGroup> door = fence == DoorFence::kNone     ? none
                                             : fence == DoorFence::kNoView ? NoViewPolicyGroups()
                                                                           : UnixSocketGroups();
  return Compile({WorkerPolicyGroups(), door, inet_fence ? InetSocketGroups() : none}, bpf);
}

int CompileMirrorPolicy(std::string* bpf) { return Compile({MirrorPolicyGroups()}, bpf); }

int InstallWorkerPolicy(DoorFence fence, bool inet_fence) {
  std::string bpf;
  if (int rc = CompileWorkerPolicy(&bpf, fence, inet_fence); rc < 0) return rc;
  return LoadCompiledPolicy(bpf);
}

}  // namespace skillmcp::seccomp
