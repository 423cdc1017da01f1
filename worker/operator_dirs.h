// The operator's directories no run may reach, whatever their files' modes
// (docs/isolation.md, "The operator's configuration"): the ones holding the unit's
// environment file, and systemd's credential stores (the sources of LoadCredential=).
// The namespaced view covers each that exists (worker/namespaces.cc); Landlock grants the
// directories above each entry by entry down its path, without it (worker/landlock.cc).
#pragma once

#include <string>
#include <vector>

namespace skillmcp::worker {

// /etc/skill-mcp, /etc/credstore, /etc/credstore.encrypted and, where this build's
// sysconfdir is not /etc, <sysconfdir>/skill-mcp. Absolute, normalised, no duplicates.
const std::vector<std::string>& OperatorDirs();

// The paths of `dirs` strictly beneath the directory `dir`, relative to it
// ("/usr", {"/usr/local/etc/skill-mcp"} gives {"local/etc/skill-mcp"}); a path is
// compared component by component, so "/usr" holds nothing of "/usrx".
std::vector<std::string> PathsBeneath(const std::string& dir,
                                      const std::vector<std::string>& dirs);

}  // namespace skillmcp::worker
