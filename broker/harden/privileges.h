// The broker does not stay root. Started as root (or holding CAP_SETUID/CAP_SETGID) it
// switches to a service identity keeping only what launching a worker under the run-as
// identity needs; started as an ordinary user it keeps what it has and says so.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "broker/harden/env_store.h"
#include "broker/harden/state_dir.h"

namespace skillmcp {

// Used when the named user does not exist: fixed ids with no passwd entry, so a
// missing sysusers entry never leaves the broker as root or runs scripts as it.
// Refused when the id already belongs to some other user.
inline constexpr uid_t kFallbackRunAsId = 64000;
inline constexpr uid_t kFallbackServiceId = 64001;

struct Identity {
  bool ok = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string how;    // "user skill-mcp-run (64000:64000)" or the fallback, for reports
  std::string error;  // why it cannot be used, when !ok
};

// `spec` is a user name or numeric "uid[:gid]" (gid defaults to uid). A name that has
// no passwd entry resolves to `fallback` (uid = gid) unless that id is someone else's.
// uid 0 or gid 0 is never ok.
Identity ResolveIdentity(std::string_view spec, uid_t fallback);

struct PrivilegeOptions {
  std::string service_user;  // SKILL_MCP_USER, default SKILL_MCP_SERVICE_USER
  std::string run_as;        // SKILL_MCP_RUN_AS, default SKILL_MCP_RUN_AS_USER
};
PrivilegeOptions PrivilegeOptionsFrom(const EnvStore& env);

struct PrivilegeState {
  bool started_as_root = false;  // some uid of the process was 0 at the start
  bool had_setid_caps = false;   // CAP_SETUID and CAP_SETGID were permitted at the start
  bool switch_demanded = false;  // started as root: leaving uid 0 is required
  bool broker_switched = false;  // the broker now runs as `service`
  Identity service;
  uid_t uid = 0;  // the broker's ids now
  gid_t gid = 0;
  bool caps_reduced = false;  // permitted/effective within {SETUID,SETGID,KILL,SETPCAP},
                              // bounding reduced likewise, ambient empty
  std::string caps_text;      // the broker's capability state now (cap_to_text)
  Identity run_as;
  bool worker_switch = false;         // workers can switch to run_as (SETUID+SETGID held)
  bool can_signal_other_uid = false;  // CAP_KILL effective (or still root)
  std::string detail;                 // reasons for anything off, for the report
  HostStateDefault host_state;        // set by the boot (broker/cli/boot.cc), not here
  // False when the configuration demanded a switch that did not happen: the caller
  // should refuse to serve rather than run as root.
  bool ok() const { return !switch_demanded || broker_switched; }
};

// Performs the switch (see .cc for the order) and reports what is in force.
PrivilegeState DropPrivileges(const PrivilegeOptions& options);

}  // namespace skillmcp
