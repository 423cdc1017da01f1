// Landlock, from the kernel's UAPI, written out here so that the build does not depend on
// how new the installed <linux/landlock.h> is (Debian 12's headers stop at ABI 2): the
// syscalls, the access rights and scopes per ABI, and the one ABI probe. The broker
// probes at boot (broker/run/launch_config.cc); the worker builds and applies the ruleset
// (worker/landlock.h). docs/isolation.md, "The filesystem allowlist", says what is allowed.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace skillmcp::landlock {

// The newest ABI this code knows the rights of. A newer kernel is used at this ABI: the
// rights it adds are not handled (allowed), exactly as on a kernel of this ABI.
inline constexpr uint32_t kKnownAbi = 7;

// Filesystem rights (LANDLOCK_ACCESS_FS_*), with the ABI that introduced each.
inline constexpr uint64_t kExecute = 1ULL << 0;      // ABI 1
inline constexpr uint64_t kWriteFile = 1ULL << 1;    // ABI 1
inline constexpr uint64_t kReadFile = 1ULL << 2;     // ABI 1
inline constexpr uint64_t kReadDir = 1ULL << 3;      // ABI 1
inline constexpr uint64_t kRemoveDir = 1ULL << 4;    // ABI 1
inline constexpr uint64_t kRemoveFile = 1ULL << 5;   // ABI 1
inline constexpr uint64_t kMakeChar = 1ULL << 6;     // ABI 1
inline constexpr uint64_t kMakeDir = 1ULL << 7;      // ABI 1
inline constexpr uint64_t kMakeReg = 1ULL << 8;      // ABI 1
inline constexpr uint64_t kMakeSock = 1ULL << 9;     // ABI 1
inline constexpr uint64_t kMakeFifo = 1ULL << 10;    // ABI 1
inline constexpr uint64_t kMakeBlock = 1ULL << 11;   // ABI 1
inline constexpr uint64_t kMakeSym = 1ULL << 12;     // ABI 1
inline constexpr uint64_t kRefer = 1ULL << 13;       // ABI 2
inline constexpr uint64_t kTruncate = 1ULL << 14;    // ABI 3
inline constexpr uint64_t kIoctlDev = 1ULL << 15;    // ABI 5

// Network rights (LANDLOCK_ACCESS_NET_*), ABI 4.
inline constexpr uint64_t kNetBindTcp = 1ULL << 0;
inline constexpr uint64_t kNetConnectTcp = 1ULL << 1;

// Scopes (LANDLOCK_SCOPE_*), ABI 6.
inline constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
inline constexpr uint64_t kScopeSignal = 1ULL << 1;

inline constexpr uint32_t kCreateRulesetVersion = 1U << 0;
inline constexpr int kRulePathBeneath = 1;

// struct landlock_ruleset_attr as of ABI 6; older kernels are passed a shorter prefix
// (RulesetAttrSize), never fields they do not know.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access = 0;
  int32_t parent_fd = -1;
};

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444  // the same number on every architecture
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

inline int CreateRuleset(const RulesetAttr* attr, size_t size, uint32_t flags) {
  return static_cast<int>(syscall(SYS_landlock_create_ruleset, attr, size, flags));
}
inline int AddPathRule(int ruleset_fd, const PathBeneathAttr& rule) {
  return static_cast<int>(syscall(SYS_landlock_add_rule, ruleset_fd, kRulePathBeneath, &rule, 0));
}
inline int RestrictSelf(int ruleset_fd) {
  return static_cast<int>(syscall(SYS_landlock_restrict_self, ruleset_fd, 0));
}

// The kernel's Landlock ABI (1, 2, ...), or -errno: ENOSYS where the kernel was built
// without it, EOPNOTSUPP where it is built but not in the boot-time LSM list.
inline int ProbeAbi() {
  int abi = CreateRuleset(nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? -errno : abi;
}

}  // namespace skillmcp::landlock
