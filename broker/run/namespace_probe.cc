#include "broker/run/namespace_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "broker/run/launch_config.h"
#include "worker/identity.h"
#include "worker/namespaces.h"

namespace skillmcp {

int ProbeRunNamespaces(const LaunchConfig& config) {
  const pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    // The worker's own steps, in its order, up to the run-specific mounts: the probe
    // fails exactly where a run would (unshare, the maps, or mount).
    worker::StepResult r;
    if (config.switch_ids) r = worker::SwitchIds(config.uid, config.gid);
    if (!r) r = worker::EnterUserNamespace();
    if (!r) r = worker::MountPrivateTmp();
    _exit(r ? (r->err & 0xff) : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (!WIFEXITED(status)) return ECHILD;
  return WEXITSTATUS(status);
}

}  // namespace skillmcp
