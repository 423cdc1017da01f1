#include "broker/harden/process_harden.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/harden/detail_text.h"

namespace skillmcp {

bool EnsureStdFds(int* opened) {
  int count = 0;
  bool ok = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // why: a missing 0-2 would be taken by the next open(), and a later write meant
    // for stderr (or JSON-RPC on stdout) would land in a file or a worker pipe.
    int null_fd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // lowest free: fd
    if (null_fd < 0) {
      ok = false;
      break;
    }
    if (null_fd != fd) {  // cannot happen when fd was the lowest free one; be exact anyway
      dup2(null_fd, fd);
      close(null_fd);
    }
    ++count;
  }
  if (opened != nullptr) *opened = count;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) ok = false;
  }
  return ok;
}

bool MakeNonDumpable() {
  // why: a non-dumpable process's /proc/<pid>/{mem,environ,maps...} are owned by root
  // and ptrace/process_vm_readv from the same uid are refused (PTRACE_MODE checks).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
}

ProcessHardening HardenProcess() {
  ProcessHardening h;
  h.std_fds_ok = EnsureStdFds(&h.std_fds_opened);
  if (!h.std_fds_ok)
    AppendDetail(h.detail, std::string("could not open /dev/null onto a missing fd 0-2: ") +
                               std::strerror(errno));

  h.dumpable_off = MakeNonDumpable();
  if (!h.dumpable_off) AppendDetail(h.detail, "PR_SET_DUMPABLE 0 did not hold");

  // why: a core file would hold every secret the broker keeps in memory.
  rlimit zero{0, 0};
  h.core_off = setrlimit(RLIMIT_CORE, &zero) == 0;
  if (!h.core_off) AppendDetail(h.detail, std::string("RLIMIT_CORE 0: ") + std::strerror(errno));

  // why: a client or worker that closes its pipe must give EPIPE, not kill the broker.
  h.sigpipe_ignored = signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  if (!h.sigpipe_ignored) AppendDetail(h.detail, "could not ignore SIGPIPE");
  return h;
}

}  // namespace skillmcp
