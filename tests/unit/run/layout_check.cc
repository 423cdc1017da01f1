// Started by spawn_test.cc in the worker's place, to check from the other side of the exec
// the layout spawn promises (broker/run/spawn.h): 0..5 placed, 6 and 7 left closed,
// nothing above 7, SIGPIPE at its default and SIGTERM unblocked. Answers on fd 4 as
// spawn's child answers a failure: a kSpawn report whose errno is ENOTSUP when everything
// is as documented, else the first descriptor number that is wrong + 1000 (1100 for
// SIGPIPE, 1101 for the mask, 1200 for a descriptor above 7).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "shared/worker_protocol.h"

namespace {

int CheckLayout() {
  for (int fd = 0; fd <= 5; ++fd)
    if (fcntl(fd, F_GETFD) < 0) return 1000 + fd;  // placed, inherited by exec
  for (int fd : {6, 7})
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) return 1000 + fd;  // -1: left closed
  for (int fd = 8; fd < 64; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) return 1200;
  struct sigaction sa {};
  if (sigaction(SIGPIPE, nullptr, &sa) != 0 || sa.sa_handler != SIG_DFL) return 1100;
  sigset_t mask;
  if (sigprocmask(SIG_BLOCK, nullptr, &mask) != 0 || sigismember(&mask, SIGTERM)) return 1101;
  return ENOTSUP;
}

}  // namespace

int main() {
  const int err = CheckLayout();
  char frame[skillmcp::kWorkerReportBytes];
  if (skillmcp::EncodeWorkerReport({skillmcp::WorkerStep::kSpawn, err}, frame))
    (void)!write(skillmcp::kWorkerReportFd, frame, sizeof frame);
  return static_cast<int>(skillmcp::WorkerStep::kSpawn);
}
