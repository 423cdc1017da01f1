#include "broker/run/module_dirs.h"

#include <unistd.h>

#include <set>

#include "shared/path_prefix.h"

namespace skillmcp {
namespace {

bool InsideASkill(const std::string& dir, const std::vector<std::string>& skill_dirs) {
  for (const std::string& skill : skill_dirs)
    if (IsSameOrBeneath(dir, skill)) return true;
  return false;
}

}  // namespace

std::vector<RootModuleDirs> ModuleDirsByRoot(const std::vector<std::string>& real_roots,
                                             const std::vector<std::string>& skill_dirs) {
  std::vector<RootModuleDirs> out;
  std::set<std::string> seen;
  for (const std::string& root : real_roots) {
    if (root.empty() || root[0] != '/' || !seen.insert(root).second) continue;
    RootModuleDirs r;
    r.root = root;
    const std::string trimmed = root == "/" ? "" : root;
    std::vector<std::string> candidates = {trimmed + "/node_modules"};
    const size_t slash = trimmed.rfind('/');
    if (slash != std::string::npos)
      candidates.push_back(trimmed.substr(0, slash) + "/node_modules");
    for (std::string& dir : candidates)
      if (!InsideASkill(dir, skill_dirs)) r.dirs.push_back(std::move(dir));
    out.push_back(std::move(r));
  }
  return out;
}

bool IsTrustedModuleDir(const struct stat& st, uint32_t broker_uid, uint32_t root_owner) {
  // why lstat's S_ISDIR: a symlink is never taken for the directory it points to.
  if (!S_ISDIR(st.st_mode)) return false;
  // why these owners only: anyone else (another local user making /tmp/node_modules
  // beside a root in /tmp) would have every run's require() load their code.
  if (st.st_uid != 0 && st.st_uid != broker_uid && st.st_uid != root_owner) return false;
  // why: a directory its group or others may write can be filled by them.
  return (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::vector<ModuleDir> RunModuleDirs(const std::vector<RootModuleDirs>& roots,
                                     const std::string& skill_dir) {
  const RootModuleDirs* own = nullptr;
  for (const RootModuleDirs& r : roots)
    if (IsSameOrBeneath(skill_dir, r.root) && (!own || r.root.size() > own->root.size()))
      own = &r;
  std::vector<ModuleDir> out;
  if (own == nullptr) return out;
  for (const std::string& dir : own->dirs) {
    struct stat st {};
    // why checked at each run, not once: a directory made or replaced after the scan
    // is judged as it is now (the worker checks its descriptor once more).
    if (lstat(dir.c_str(), &st) != 0 || !IsTrustedModuleDir(st, geteuid(), own->root_owner))
      continue;
    // why the identity goes along: the worker opens the path later and must not trust a
    // directory renamed into its place since this check (worker/module_dir.h).
    // why inode 0 left out: a valid spec refuses it (IsValidRunSpec); it is no identity
    // to hold the worker to.
    if (st.st_ino != 0)
      out.push_back({dir, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  }
  return out;
}

}  // namespace skillmcp
