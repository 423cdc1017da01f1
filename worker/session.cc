#include "worker/session.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp::worker {

StepResult StartOwnSession() {
  // Own session and group: the broker signals the whole group on timeout (a script's
  // children included), and the script has no controlling terminal to reach.
  if (setsid() < 0) return StepFailed(WorkerStep::kSetsid, errno);
  // Blocked or ignored signals survive exec. A broker that blocks SIGTERM/SIGCHLD for
  // its own event loop must not hand that to the script: the timeout's SIGTERM has to
  // land. So every catchable signal goes back to default and the mask is emptied.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    // EINVAL for the numbers glibc reserves (32, 33): nothing to reset there.
    if (sigaction(sig, &sa, nullptr) != 0 && errno != EINVAL)
      return StepFailed(WorkerStep::kSetsid, errno);
  }
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return StepFailed(WorkerStep::kSetsid, errno);
  return StepOk();
}

}  // namespace skillmcp::worker
