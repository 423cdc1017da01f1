#include "egress/harden.h"

#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace skillmcp::egress {
namespace {

// [first, last] closed; close_range where the kernel has it (5.9), else one by one up to
// the descriptor limit (no /proc walk: /proc may be hidden under the unit).
int CloseRange(unsigned first, unsigned last) {
  if (first > last) return 0;
  if (syscall(SYS_close_range, first, last, 0) == 0) return 0;
  if (errno != ENOSYS && errno != EINVAL) return errno;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return errno;
  const rlim_t top =
      rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
  for (rlim_t fd = first; fd <= last && fd < top; ++fd) close(static_cast<int>(fd));
  return 0;
}

}  // namespace

int HardenProcess() {
  // why: the helper needs no privilege and gains none: a setuid program it could be
  // tricked into running stays unprivileged.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  // why: no core dump and no ptrace by its own uid: the helper holds brokers' sockets and
  // the connections it opens for them.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return errno;
  // A broker that goes away mid-answer is EPIPE on that broker alone (sends use
  // MSG_NOSIGNAL too).
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) return errno;
  return 0;
}

int DropInheritance(int keep) {
  // why: the resolver reads HOSTALIASES, LOCALDOMAIN and RES_OPTIONS from the
  // environment; whoever started the helper does not get to redirect names that way.
  if (clearenv() != 0) return ENOMEM;
  // why: a descriptor leaked by whoever started the helper (another broker's socket, a
  // file) is not the helper's to hold.
  const unsigned k = static_cast<unsigned>(keep);
  if (keep < 3) return CloseRange(3, ~0U);
  if (int e = CloseRange(3, k - 1)) return e;
  return CloseRange(k + 1, ~0U);
}

}  // namespace skillmcp::egress
