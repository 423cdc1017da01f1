// The host-wide state directory every broker of the host shares (docs/configuration.md,
// "The state directory"; docs/isolation.md, "Own identity per run"): the spent-token record and the
// per-run uid locks live in it. Resolved from SKILL_MCP_STATE_DIR, $STATE_DIRECTORY
// (systemd StateDirectory=), for a broker started as root kHostStateDir (the unit's own
// directory, made before the privilege drop: PrepareHostStateDir), else
// $XDG_RUNTIME_DIR/skill-mcp, in that order. Every
// directory on the way is opened with O_NOFOLLOW from "/" and checked (owner, mode)
// before it is trusted; later operations use openat() on the open descriptor.
#pragma once

#include <sys/types.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/unique_fd.h"

namespace skillmcp {

using StateGetFn = std::function<std::optional<std::string>(std::string_view)>;

// The packaged unit's StateDirectory=skill-mcp: systemd puts a system unit's state
// directories in /var/lib whatever the install prefix, so this path is fixed.
inline constexpr char kHostStateDir[] = "/var/lib/skill-mcp";

// The host-wide default of a broker started as root (docs/isolation.md, "Own identity per
// run"): `applies` only then, and only when neither variable names a directory; `path`
// when PrepareHostStateDir accepted it, else `error` says why the layers needing it are off.
struct HostStateDefault {
  bool applies = false;
  std::string path;
  std::string error;
};

struct StateBase {
  std::string base;                  // absolute; empty when none is configured
  std::vector<std::string> subdirs;  // made beneath base ("skill-mcp" for XDG_RUNTIME_DIR)
  std::string from;                  // the variable it came from, for messages
  std::string error;                 // with an empty base: why the host default is refused
};

// The configured base, or an empty base when none of the three variables is set and
// `host` does not apply (or was refused: then `error` says why).
StateBase ResolveStateBase(const StateGetFn& get, const HostStateDefault& host = {});

// True when a root-started broker falls back to the host-wide default: neither
// SKILL_MCP_STATE_DIR nor $STATE_DIRECTORY is set.
// The first entry of systemd's $STATE_DIRECTORY when it is the unit's (its last component
// is "skill-mcp"); another service's state directory is not ours.
std::optional<std::string> UnitStateDirectory(const StateGetFn& get);
bool NeedsHostStateDefault(const StateGetFn& get);

// As root, before the privilege drop: opens `path` (kHostStateDir; tests pass another),
// creating its last component for `uid`:`gid` with mode 0700 when missing. Every
// directory above it must be owned by root and writable by nobody else (no sticky
// exception); an existing last component must be a directory (not a link) owned by `uid`
// with mode 0700. On any doubt `error` says why and `path` stays empty (fail closed).
HostStateDefault PrepareHostStateDir(const std::string& path, uid_t uid, gid_t gid);

struct OpenedStateDir {
  UniqueFd fd;        // O_RDONLY|O_DIRECTORY of the last component; invalid on error
  std::string path;   // the checked path
  std::string error;  // why not, when !fd
};

// Opens `base` (which must exist), then each of `subdirs` beneath it, creating those with
// mode 0700 where missing. Every ancestor of base must be owned by root or this euid and
// not writable by others unless sticky; base and what is made beneath it must be ours (or
// root's) and writable by nobody else. Fails closed on any doubt.
OpenedStateDir OpenStateSubdir(const std::string& base, const std::vector<std::string>& subdirs);

// ResolveStateBase + OpenStateSubdir(base, its subdirs + `leaf`).
OpenedStateDir OpenStateDirFromEnv(const StateGetFn& get,
                                   std::initializer_list<std::string_view> leaf,
                                   const HostStateDefault& host = {});

// Empty when `path` is shared with the host's other processes as far as can be told, else
// why it is not: it lies in /tmp or /var/tmp while this process has a private one
// (systemd PrivateTmp=: /tmp is a bind of a "systemd-private-*" directory in
// /proc/self/mountinfo, or its device and inode differ from /proc/1/root/tmp where that
// is readable). `mountinfo` is /proc/self/mountinfo's text (pure for tests);
// `host_tmp_differs` the result of the /proc/1/root comparison (nullopt: unreadable).
std::string PrivateTmpProblem(const std::string& path, std::string_view mountinfo,
                              std::optional<bool> host_tmp_differs);

// The same, reading this process's state.
std::string PrivateTmpProblemHere(const std::string& path);

}  // namespace skillmcp
