// The operator's directories no run may reach, whatever their files' modes
// (docs/isolation.md, "The operator's configuration"): the one holding the unit's
// environment file, and systemd's credential stores (the sources of LoadCredential=).
// The namespaced view covers each that exists (worker/namespaces.cc); Landlock grants the
// directory holding them entry by entry without them (worker/landlock_rules.cc).
#pragma once

#include <string>
#include <vector>

namespace skillmcp::worker {

// Absolute, without a trailing slash or duplicates.
const std::vector<std::string>& OperatorDirs();

}  // namespace skillmcp::worker
