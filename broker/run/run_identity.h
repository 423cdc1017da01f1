// Boot-time resolution of the per-run identity (broker/run/run_uids.h) for the launch
// configuration: SKILL_MCP_RUN_UIDS (unset: the default range where it can work, off with
// the reason where not; "A-B": that range, and runs are refused where it cannot work;
// "off": every run under the fixed run-as uid).
#pragma once

#include <string>

#include "broker/harden/env_store.h"
#include "broker/harden/privileges.h"
#include "broker/run/host_ids.h"
#include "broker/run/launch_config.h"

namespace skillmcp {

// Sets c.run_uids (or c.run_uids_off_reason), c.run_uids_demanded and c.run_uids_warning.
// Returns a boot error for a malformed or clashing option, else "". c.switch_ids, c.uid
// and c.gid must be set.
std::string ResolveRunIdentity(const EnvStore& env, const PrivilegeState& privileges,
                               LaunchConfig& c);

// The same, checking the range against `files` (broker/run/host_ids.h): a clash turns
// identity off with the reason for the default range, and refuses runs for a named one.
std::string ResolveRunIdentity(const EnvStore& env, const PrivilegeState& privileges,
                               LaunchConfig& c, const HostIdFiles& files);

// Why runs are refused for the identity option, or "".
std::string RunIdentityRefusal(const LaunchConfig& c);

}  // namespace skillmcp
