// The node_modules directories a run may read (docs/isolation.md, "The filesystem
// allowlist"): computed per skills root after the catalogue scan (SetHiddenRoots), then
// chosen and checked for each run (RunSupervisor), whose worker checks them once more on
// the descriptor it opens (worker/module_dir.h).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "shared/worker_protocol.h"

namespace skillmcp {

struct RootModuleDirs {
  std::string root;               // the skills root's real path
  uint32_t root_owner = 0;        // its owner (an accepted owner of its module dirs)
  std::vector<std::string> dirs;  // <root>/node_modules, <parent of root>/node_modules
};

// Pure: per root (real, absolute; others skipped), its module directories, except any
// that is or lies inside a served skill's directory (`skill_dirs`, real paths). why: a
// skill's own node_modules is part of that skill's bundle, never every run's.
std::vector<RootModuleDirs> ModuleDirsByRoot(const std::vector<std::string>& real_roots,
                                             const std::vector<std::string>& skill_dirs);

// Pure: whether a directory with lstat result `st` may be read by runs: a real directory
// (not a symlink), owned by root, by `broker_uid` or by `root_owner`, that neither its
// group nor others may write.
bool IsTrustedModuleDir(const struct stat& st, uint32_t broker_uid, uint32_t root_owner);

// The module directories of the root the skill at `skill_dir` (real path) was found
// under (the longest root that is or holds it), each checked now with lstat and
// IsTrustedModuleDir (geteuid() as the broker's uid), with the device and inode that
// lstat saw (the worker uses only that directory); the others are left out.
std::vector<ModuleDir> RunModuleDirs(const std::vector<RootModuleDirs>& roots,
                                     const std::string& skill_dir);

}  // namespace skillmcp
