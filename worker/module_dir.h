// Opening one node_modules directory a run may read (RunSpec::read_dirs), for the
// Landlock rule (worker/landlock.cc) and the bind into a namespaced view
// (worker/namespaces.cc): the same checks on both paths. docs/isolation.md, "The
// filesystem allowlist".
#pragma once

#include <string>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"

namespace skillmcp::worker {

// Opens the absolute, normalised `path` as an O_PATH directory without following any
// symlink, on any component (openat2 RESOLVE_NO_SYMLINKS; where openat2 is refused, a walk
// from "/" with O_NOFOLLOW on every component). A symlink met fails with ELOOP or ENOTDIR.
UniqueFd OpenDirNoSymlinks(const std::string& path);

// The same beneath the directory open at `base`: `rel` is relative ("" is `base` itself)
// and may not leave it (openat2 RESOLVE_BENEATH; the fallback walk refuses ".."). For a
// directory a cover of the run's view hides, opened before covering (worker/namespaces.h).
UniqueFd OpenDirNoSymlinksBeneath(int base, const std::string& rel);

// Opens the absolute `dir.path` with OpenDirNoSymlinks, then checks the descriptor: a
// directory that neither its group nor others may write, and the very directory the broker
// checked (`dir.dev`, `dir.ino`). Invalid with errno on failure; EPERM when the directory is
// there but fails the mode check, ESTALE when it is another directory than the broker's.
UniqueFd OpenModuleDir(const ModuleDir& dir);

// OpenModuleDir's checks on `fd`, however it was opened (invalid `fd`: errno as left).
UniqueFd CheckModuleDir(UniqueFd fd, const ModuleDir& dir);

// True for the errors of OpenModuleDir that mean "no such usable directory here": the
// directory is skipped (no rule, no bind), the run goes on.
bool IsSkippedModuleDirError(int err);

}  // namespace skillmcp::worker
