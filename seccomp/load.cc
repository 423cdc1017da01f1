#include "seccomp/load.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skillmcp::seccomp {

static_assert(sizeof(sock_filter) == kBpfInsnBytes);
static_assert(BPF_MAXINSNS == kBpfMaxInsns);

int PreparePolicy(std::string_view bpf, PreparedPolicy& out) {
  if (!IsPlausibleBpf(bpf)) return -EINVAL;
  // Copied into properly aligned records: the bytes come from a string.
  out.insns.resize(bpf.size() / kBpfInsnBytes);
  std::memcpy(out.insns.data(), bpf.data(), bpf.size());
  return 0;
}

int LoadPreparedPolicy(const PreparedPolicy& policy) {
  if (policy.insns.empty() || policy.insns.size() > kBpfMaxInsns) return -EINVAL;
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(policy.insns.size());
  // The kernel copies the program in and never writes through the pointer.
  prog.filter = const_cast<sock_filter*>(policy.insns.data());
  // No flags: no TSYNC (the worker is single-threaded), no SPEC_ALLOW (keep the
  // kernel's speculation defaults for filtered tasks), as libseccomp's load would.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return -errno;
  return 0;
}

int LoadCompiledPolicy(std::string_view bpf) {
  PreparedPolicy policy;
  if (int rc = PreparePolicy(bpf, policy); rc != 0) return rc;
  return LoadPreparedPolicy(policy);
}

}  // namespace skillmcp::seccomp
