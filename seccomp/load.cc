#include "seccomp/load.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skillmcp::seccomp {

static_assert(sizeof(sock_filter) == kBpfInsnBytes);
static_assert(BPF_MAXINSNS == kBpfMaxInsns);

int LoadCompiledPolicy(std::string_view bpf) {
  if (!IsPlausibleBpf(bpf)) return -EINVAL;
  // Copied into properly aligned records: the bytes come from a string.
  std::vector<sock_filter> insns(bpf.size() / kBpfInsnBytes);
  std::memcpy(insns.data(), bpf.data(), bpf.size());
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(insns.size());
  prog.filter = insns.data();
  // No flags: no TSYNC (the worker is single-threaded), no SPEC_ALLOW (keep the
  // kernel's speculation defaults for filtered tasks), as libseccomp's load would.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return -errno;
  return 0;
}

}  // namespace skillmcp::seccomp
