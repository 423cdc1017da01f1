#include "worker/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "shared/landlock_abi.h"
#include "shared/unique_fd.h"
#include "worker/exec.h"
#include "worker/landlock_rules.h"
#include "worker/module_dir.h"
#include "worker/operator_dirs.h"
#include "worker/operator_ids.h"

namespace skillmcp::worker {
namespace {

StepResult Failed(int err) { return StepFailed(WorkerStep::kLandlock, err); }

// Adds one rule on the open `fd`, whose kind `st` gives; a non-directory keeps only the
// file rights.
int AddRule(int ruleset, int fd, const struct stat& st, uint64_t access) {
  landlock::PathBeneathAttr rule;
  rule.allowed_access = S_ISDIR(st.st_mode) ? access : FileOnlyAccess(access);
  rule.parent_fd = fd;
  if (rule.allowed_access == 0) return 0;
  return landlock::AddPathRule(ruleset, rule) == 0 ? 0 : errno;
}

int AddRule(int ruleset, int fd, uint64_t access) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return errno;
  return AddRule(ruleset, fd, st, access);
}

// why a bound: a directory above an operator's directory holds it at a finite depth; a
// deeper walk means a loop of mounts, and the step fails rather than guess.
constexpr int kMaxWalkDepth = 64;

// A rule on everything beneath the directory `dir` (one above an operator's directory)
// but the operator's directories: `dir` itself gets only kReadDir (so it can still be
// listed), an operator's directory nothing, a directory above one the same treatment one
// level down, every other entry the whole rule. Entries are told by device and inode
// (worker/operator_ids.h), never by name. Never follows a symlink: its target is judged
// by the rules of where it lies.
int AddRulesAround(int ruleset, int dir, uint64_t access, const OperatorIds& ops, int depth) {
  if (depth > kMaxWalkDepth) return ELOOP;
  if (int err = AddRule(ruleset, dir, access & landlock::kReadDir); err != 0) return err;
  UniqueFd listing(openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!listing.valid()) return errno;
  DIR* d = fdopendir(listing.get());
  if (d == nullptr) return errno;
  listing.release();
  int err = 0;
  while (dirent* e = readdir(d)) {
    const char* name = e->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || e->d_type == DT_LNK) continue;
    UniqueFd fd(openat(dirfd(d), name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) continue;
    struct stat st {};
    // why no stat of a file: only a directory can be (or hold) an operator's directory,
    // and a mount point's kind is its covered entry's (the kernel mounts like on like).
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
      if (fstat(fd.get(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      const DirId id = IdOf(st);
      if (S_ISDIR(st.st_mode) && ops.IsOperatorDir(id)) continue;  // nothing granted
      if (S_ISDIR(st.st_mode) && ops.IsAbove(id)) {
        err = AddRulesAround(ruleset, fd.get(), access, ops, depth + 1);
        if (err == EACCES) err = 0;  // one the run-as user cannot list: nothing granted there
        if (err != 0) break;
        continue;
      }
    } else {
      st.st_mode = S_IFREG;  // any non-directory: only the file rights
    }
    // why not fatal: an entry the kernel takes no rule on (a pseudo filesystem mounted
    // there) is simply not granted, which only allows less.
    (void)AddRule(ruleset, fd.get(), st, access);
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

int AddPathRule(int ruleset, const LandlockPathRule& r, int skill_dir_fd,
                const OperatorIds& ops) {
  if (r.from_skill_fd) return AddRule(ruleset, skill_dir_fd, r.access);
  if (r.module_dir) return AddModuleDirRule(ruleset, r);
  // Opened as the run-as user (after the uid switch): a path that user cannot reach gets
  // no rule. System paths may be symlinks (/lib -> usr/lib on merged-/usr hosts). why no
  // symlink followed for a named path: the broker sends real paths, so a link met now was
  // swapped in since (or one on a path the broker could not resolve) and names another
  // directory than the one meant.
  UniqueFd fd = r.named ? OpenDirNoSymlinks(r.path)
                        : UniqueFd(open(r.path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    // why: an optional path that is absent, unreachable or a link allows nothing; a
    // required one (the scratch directory, node's location) missing means a broken run.
    if (!r.required && (err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP))
      return 0;
    return err;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode) && !ops.empty()) {
    // why refused: a directory the operator or the broker named (MCP_DATA_DIR, TMPDIR,
    // node's prefix) that is, or lies in, one of the operator's directories would hand a
    // run what no run may reach; the run fails at this step instead (fail closed).
    if (r.named) {
      bool inside = false;
      if (int err = ops.AtOrBeneath(fd.get(), inside); err != 0) return err;
      if (inside) return EPERM;
    } else if (ops.IsOperatorDir(IdOf(st))) {
      return 0;  // a system path that is one: nothing granted
    }
    if (ops.IsAbove(IdOf(st))) return AddRulesAround(ruleset, fd.get(), r.access, ops, 0);
  }
  return AddRule(ruleset, fd.get(), st, r.access);
}

UniqueFd CreateRuleset(const LandlockPlan& plan) {
  landlock::RulesetAttr attr;
  attr.handled_access_fs = plan.handled_fs;
  attr.handled_access_net = plan.handled_net;
  attr.scoped = plan.scoped;
  return UniqueFd(landlock::CreateRuleset(&attr, plan.attr_size, 0));
}

// Adds the plan's rules, but those marked `ahead` when `skip_ahead` (they are in the
// ruleset already). The operator's directories are looked up now, as the run-as user and in
// the run's view (a namespaced run's covers are what its rules would reach).
int AddRules(int ruleset, const LandlockPlan& plan, int skill_dir_fd, bool skip_ahead) {
  OperatorIds ops;
  if (int err = ops.Load(OperatorDirs()); err != 0) return err;
  for (const LandlockPathRule& r : plan.rules) {
    if (skip_ahead && r.ahead) continue;
    if (int err = AddPathRule(ruleset, r, skill_dir_fd, ops); err != 0) return err;
  }
  return 0;
}

}  // namespace

StepResult PrepareLandlockAhead(const CellSpec& cell, LandlockAhead& ahead) {
  const LandlockPlan plan =
      BuildLandlockAheadPlan(cell.landlock_abi, cell.network_off, cell.node_dir_path);
  if (plan.abi == 0) return StepOk();
  UniqueFd made = CreateRuleset(plan);
  if (!made.valid()) return Failed(errno);
  // why above the bootstrap's fd: the run's 6 and 7 arrive later, and are refused if
  // those numbers are taken (EEXIST).
  UniqueFd ruleset(fcntl(made.get(), F_DUPFD_CLOEXEC, kWorkerBootstrapFd + 1));
  if (!ruleset.valid()) return Failed(errno);
  if (int err = AddRules(ruleset.get(), plan, -1, /*skip_ahead=*/false); err != 0)
    return Failed(err);
  ahead.ruleset = std::move(ruleset);
  return StepOk();
}

StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd, LandlockAhead& ahead) {
  const LandlockPlan plan = BuildLandlockPlan(spec);
  if (plan.abi == 0) return StepOk();
  const bool made_ahead = ahead.ruleset.valid();
  UniqueFd ruleset = made_ahead ? std::move(ahead.ruleset) : CreateRuleset(plan);
  if (!ruleset.valid()) return Failed(errno);
  if (int err = AddRules(ruleset.get(), plan, skill_dir_fd, made_ahead); err != 0)
    return Failed(err);
  if (landlock::RestrictSelf(ruleset.get()) != 0) return Failed(errno);
  return StepOk();
}

}  // namespace skillmcp::worker
