// Whether runs can get their own user, mount, pid and IPC namespace here (auto or on):
// tried once at boot, the way a run would, by the real worker in its probe mode.
#pragma once

#include <optional>

#include "shared/worker_protocol.h"

namespace skillmcp {

struct LaunchConfig;

struct NamespaceProbe {
  int err = 0;                     // 0: everything the probe was asked for worked
  std::optional<WorkerStep> step;  // the worker's failing step, when it reported one
};

// Spawns the worker (broker/run/spawn.h) with a probe RunSpec: it takes the run-as
// identity (when the config switches ids) and does the run-independent namespace steps:
// unshare(CLONE_NEWUSER | CLONE_NEWNS), the uid/gid maps, / private and a tmpfs on
// /tmp, unshare(CLONE_NEWPID | CLONE_NEWIPC) and the fork of the namespace's init, which
// mounts a fresh /proc when `fresh_proc`. err is 0 when all worked, else the errno that
// stopped it (EPERM under RestrictNamespaces= or a container profile, or from mount under
// a system call filter without @mount, or from the /proc mount where the runtime masks
// parts of /proc; ENOSPC when user.max_user_namespaces is 0, ...).
NamespaceProbe ProbeRunNamespaces(const LaunchConfig& config, bool fresh_proc);

}  // namespace skillmcp
