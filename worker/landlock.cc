#include "worker/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <vector>

#include "shared/landlock_abi.h"
#include "shared/unique_fd.h"
#include "worker/landlock_rules.h"
#include "worker/module_dir.h"

namespace skillmcp::worker {
namespace {

StepResult Failed(int err) { return StepFailed(WorkerStep::kLandlock, err); }

// Adds one rule from an open descriptor; a non-directory keeps only the file rights.
int AddRule(int ruleset, int fd, uint64_t access) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return errno;
  landlock::PathBeneathAttr rule;
  rule.allowed_access = S_ISDIR(st.st_mode) ? access : FileOnlyAccess(access);
  rule.parent_fd = fd;
  if (rule.allowed_access == 0) return 0;
  return landlock::AddPathRule(ruleset, rule) == 0 ? 0 : errno;
}

// The first component of each of `excluded` that is `name` exactly (the entry is
// excluded: true) or leads to one (its remainder goes to `below`).
bool Excluded(const std::string& name, const std::vector<std::string>& excluded,
              std::vector<std::string>& below) {
  for (const std::string& path : excluded) {
    if (path == name) return true;
    if (path.size() > name.size() && path.compare(0, name.size(), name) == 0 &&
        path[name.size()] == '/')
      below.push_back(path.substr(name.size() + 1));
  }
  return false;
}

// A rule on everything beneath the directory `dir` but the relative paths `excluded`:
// `dir` itself gets only kReadDir (so it can still be listed), an excluded entry nothing,
// an entry on the way to one the same treatment one level down, every other entry the
// whole rule. Never follows a symlink: its target is judged by the rules of where it lies.
int AddRulesExcept(int ruleset, int dir, uint64_t access,
                   const std::vector<std::string>& excluded) {
  if (int err = AddRule(ruleset, dir, access & landlock::kReadDir); err != 0) return err;
  UniqueFd listing(openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!listing.valid()) return errno;
  DIR* d = fdopendir(listing.get());
  if (d == nullptr) return errno;
  listing.release();
  int err = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    std::vector<std::string> below;
    if (name == "." || name == ".." || Excluded(name, excluded, below)) continue;
    UniqueFd fd(openat(dirfd(d), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
    // why: a directory on the way to an excluded path is granted around it in turn;
    // depth is bounded by the excluded paths' components.
    if (!below.empty()) {
      if (!S_ISDIR(st.st_mode)) continue;  // not a directory: nothing beneath to grant
      err = AddRulesExcept(ruleset, fd.get(), access, below);
      if (err == EACCES) err = 0;  // one the run-as user cannot list: nothing granted there
      if (err != 0) break;
      continue;
    }
    // why not fatal: an entry the kernel takes no rule on (a pseudo filesystem mounted
    // there) is simply not granted, which only allows less.
    (void)AddRule(ruleset, fd.get(), access);
  }
  closedir(d);
  return err;
}

// A node_modules directory: no symlink followed and the descriptor checked
// (worker/module_dir.h). why skipped, not fatal: a planted link, a directory others
// may write or one swapped since the broker's check allows nothing, and the run goes on.
int AddModuleDirRule(int ruleset, const LandlockPathRule& r) {
  UniqueFd fd = OpenModuleDir({r.path, r.module_dev, r.module_ino});
  if (!fd.valid()) return IsSkippedModuleDirError(errno) ? 0 : errno;
  return AddRule(ruleset, fd.get(), r.access);
}

int AddPathRule(int ruleset, const LandlockPathRule& r, int skill_dir_fd) {
  if (r.from_skill_fd) return AddRule(ruleset, skill_dir_fd, r.access);
  if (r.module_dir) return AddModuleDirRule(ruleset, r);
  // Opened as the run-as user (after the uid switch): a path that user cannot reach gets
  // no rule. System paths may be symlinks (/lib -> usr/lib on merged-/usr hosts).
  UniqueFd fd(open(r.path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    // why: an optional path that is absent or unreachable allows nothing; a required
    // one (the scratch directory, node's location) missing means a broken run: fail.
    if (!r.required && (err == ENOENT || err == ENOTDIR || err == EACCES)) return 0;
    return err;
  }
  if (!r.excluded.empty()) {
    // A rule path that is not a directory has nothing beneath it to exclude.
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return AddRulesExcept(ruleset, fd.get(), r.access, r.excluded);
  }
  return AddRule(ruleset, fd.get(), r.access);
}

}  // namespace

StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd) {
  const LandlockPlan plan = BuildLandlockPlan(spec);
  if (plan.abi == 0) return StepOk();
  landlock::RulesetAttr attr;
  attr.handled_access_fs = plan.handled_fs;
  attr.handled_access_net = plan.handled_net;
  attr.scoped = plan.scoped;
  UniqueFd ruleset(landlock::CreateRuleset(&attr, plan.attr_size, 0));
  if (!ruleset.valid()) return Failed(errno);
  for (const LandlockPathRule& r : plan.rules) {
    if (int err = AddPathRule(ruleset.get(), r, skill_dir_fd); err != 0) return Failed(err);
  }
  if (landlock::RestrictSelf(ruleset.get()) != 0) return Failed(errno);
  return StepOk();
}

}  // namespace skillmcp::worker
