// Whether runs can get their own user and mount namespace here (SKILL_MCP_NAMESPACES=on):
// tried once at boot, the way a run would, by the real worker in its probe mode.
#pragma once

namespace skillmcp {

struct LaunchConfig;

// Spawns the worker (broker/run/spawn.h) with a probe RunSpec: it takes the run-as
// identity (when the config switches ids) and does the run-independent namespace steps:
// unshare(CLONE_NEWUSER | CLONE_NEWNS), the uid/gid maps, / private and a tmpfs on
// /tmp. Returns 0 when all worked, else the errno that stopped it (EPERM under
// RestrictNamespaces= or a container profile, or from mount under a system call filter
// without @mount; ENOSPC when user.max_user_namespaces is 0, ...).
int ProbeRunNamespaces(const LaunchConfig& config);

}  // namespace skillmcp
