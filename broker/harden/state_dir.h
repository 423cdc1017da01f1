// The host-wide state directory every broker of the host shares (README, "The fence and
// the gate"; docs/isolation.md, "Own identity per run"): the spent-token record and the
// per-run uid locks live in it. Resolved from SKILL_MCP_STATE_DIR, $STATE_DIRECTORY
// (systemd StateDirectory=) or $XDG_RUNTIME_DIR/skill-mcp, in that order. Every
// directory on the way is opened with O_NOFOLLOW from "/" and checked (owner, mode)
// before it is trusted; later operations use openat() on the open descriptor.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/unique_fd.h"

namespace skillmcp {

using StateGetFn = std::function<std::optional<std::string>(std::string_view)>;

struct StateBase {
  std::string base;                  // absolute; empty when none is configured
  std::vector<std::string> subdirs;  // made beneath base ("skill-mcp" for XDG_RUNTIME_DIR)
  std::string from;                  // the variable it came from, for messages
};

// The configured base, or an empty base when none of the three variables is set.
StateBase ResolveStateBase(const StateGetFn& get);

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
                                   std::initializer_list<std::string_view> leaf);

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
