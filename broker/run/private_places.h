// The places a namespaced run must not see because users' live sockets and secrets sit
// there: the session bus and runtime directories, ssh and gpg agents, keyrings, homes,
// daemons' sockets under /run, what other programs leave in /var/tmp, removable media.
// The worker covers each with an empty read-only tmpfs (worker/namespaces.h), like a
// skills root, and binds back only what the run needs from them (its own skill, scratch
// and data directories, node's prefix, the resolver's files). docs/isolation.md, "What a
// run sees".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// The fixed places, before resolution.
inline constexpr const char* kPrivatePlaces[] = {"/home", "/root", "/run",   "/var/run",
                                                 "/var/tmp", "/media", "/mnt", "/srv"};

// The real directories among kPrivatePlaces, the broker's `home` and its `runtime_dir`
// (XDG_RUNTIME_DIR; either may be empty or relative, and is then skipped): each resolved
// (a link such as /var/run -> /run counts once), absent ones left out. why never "/" or an
// ancestor of the system (a HOME of "/" or "/usr"): covering it would hide what every run
// needs to start. Sorted and free of duplicates.
std::vector<std::string> PrivatePlaces(std::string_view home, std::string_view runtime_dir);

}  // namespace skillmcp
