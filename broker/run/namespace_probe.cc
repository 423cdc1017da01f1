#include "broker/run/namespace_probe.h"

#include <grp.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "broker/run/launch_config.h"

namespace skillmcp {

int ProbeRunNamespaces(const LaunchConfig& config) {
  const pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    // Only async-signal-safe calls from here: the broker may have other state.
    if (config.switch_ids) {
      if (setgroups(0, nullptr) != 0 || setresgid(config.gid, config.gid, config.gid) != 0 ||
          setresuid(config.uid, config.uid, config.uid) != 0)
        _exit(errno & 0xff);
    }
    _exit(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : (errno & 0xff));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno;
  }
  if (!WIFEXITED(status)) return ECHILD;
  return WEXITSTATUS(status);
}

}  // namespace skillmcp
