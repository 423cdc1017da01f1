// Read-only binds for the run's view (worker/namespaces.cc): the skill directory and the
// node_modules directories bound back over the covers (docs/isolation.md).
#pragma once

#include <string>
#include <string_view>

namespace skillmcp::worker {

// Makes the bind at `path` (of the directory `fd`) read-only, nosuid and nodev, keeping
// what the source's mount must keep. Only the top mount. 0 or an errno.
int RemountBindReadOnly(const std::string& path, int fd);

// Makes the recursive bind at `path` (of the directory `fd`) read-only, nosuid and nodev,
// every mount beneath it included; EPERM where that cannot be done (see the .cc). 0 or an
// errno.
int MakeBindReadOnly(const std::string& path, int fd);

// Pure: whether the mountinfo text (proc_pid_mountinfo(5)) names a mount point strictly
// beneath `path` (normalised, absolute). False with `*ok` false on a malformed line.
bool HasMountBeneath(std::string_view mountinfo, std::string_view path, bool* ok);

}  // namespace skillmcp::worker
