// The operator's directories no run may reach, whatever their files' modes
// (docs/isolation.md, "The operator's configuration"): the ones holding the unit's
// environment file, and systemd's credential stores (the sources of LoadCredential=).
// The namespaced view covers each that exists (worker/namespaces.cc); Landlock grants the
// directories above each entry by entry, without it, telling them by device and inode
// (worker/operator_ids.h, worker/landlock.cc).
#pragma once

#include <string>
#include <vector>

namespace skillmcp::worker {

// /etc/skill-mcp; /etc, /run and /usr/lib's credstore and credstore.encrypted; and, where
// this build's sysconfdir is not /etc, <sysconfdir>/skill-mcp. Absolute, normalised, no
// duplicates.
const std::vector<std::string>& OperatorDirs();

}  // namespace skillmcp::worker
