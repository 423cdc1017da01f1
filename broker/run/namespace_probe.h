// Whether runs can get their own user and mount namespace here (SKILL_MCP_NAMESPACES=on):
// tried once at boot, the way a worker would, in a throwaway child.
#pragma once

namespace skillmcp {

struct LaunchConfig;

// Forks a child that takes the run-as identity (when the config switches ids) and
// calls unshare(CLONE_NEWUSER | CLONE_NEWNS). Returns 0 when that worked, else the
// errno that stopped it (EPERM under RestrictNamespaces= or a container profile,
// ENOSPC when user.max_user_namespaces is 0, ...).
int ProbeRunNamespaces(const LaunchConfig& config);

}  // namespace skillmcp
