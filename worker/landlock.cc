#include "worker/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "shared/landlock_abi.h"
#include "shared/unique_fd.h"
#include "worker/caps.h"
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
// `path` names `dir`; with `walked`, each directory listed is noted there as it is now.
int AddRulesAround(int ruleset, int dir, uint64_t access, const OperatorIds& ops, int depth,
                   const std::string& path, std::vector<WalkedDir>* walked) {
  if (depth > kMaxWalkDepth) return ELOOP;
  if (walked != nullptr) {
    WalkedDir w{path, {}};
    if (fstat(dir, &w.seen) != 0) return errno;
    walked->push_back(std::move(w));
  }
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
        err = AddRulesAround(ruleset, fd.get(), access, ops, depth + 1, path + "/" + name, walked);
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

int AddPathRule(int ruleset, const LandlockPathRule& r, int skill_dir_fd, const OperatorIds& ops,
                std::vector<WalkedDir>* walked) {
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
    if (ops.IsAbove(IdOf(st)))
      return AddRulesAround(ruleset, fd.get(), r.access, ops, 0, r.path, walked);
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
// ruleset already), each decided by `ops` (the operator's directories as looked up by the
// caller: as the run-as user and in the run's view, whose covers are what the rules reach).
int AddRules(int ruleset, const LandlockPlan& plan, int skill_dir_fd, const OperatorIds& ops,
             bool skip_ahead, std::vector<WalkedDir>* walked) {
  for (const LandlockPathRule& r : plan.rules) {
    if (skip_ahead && r.ahead) continue;
    if (int err = AddPathRule(ruleset, r, skill_dir_fd, ops, walked); err != 0) return err;
  }
  return 0;
}

bool SameTime(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Whether the rules made ahead were decided by what holds now: the same operator's
// directories, and every directory granted around them the same inode, unchanged.
bool AheadStillHolds(const LandlockAhead& ahead, const OperatorIds& now) {
  if (!(ahead.ops == now)) return false;
  for (const WalkedDir& w : ahead.walked) {
    struct stat st {};
    if (stat(w.path.c_str(), &st) != 0 || st.st_dev != w.seen.st_dev ||
        st.st_ino != w.seen.st_ino || !SameTime(st.st_mtim, w.seen.st_mtim) ||
        !SameTime(st.st_ctim, w.seen.st_ctim))
      return false;
  }
  return true;
}

}  // namespace

StepResult PrepareLandlockAhead(const CellSpec& cell, LandlockAhead& ahead) {
  const LandlockPlan plan =
      BuildLandlockAheadPlan(cell.landlock_abi, cell.network_off, cell.node_dir_path);
  if (plan.abi == 0) return StepOk();
  // why: the worker may still hold effective capabilities here (a root broker's worker
  // keeps them across its uid switch until kDropCaps; inside its user namespace it holds
  // them all); the run's step makes its lookups with none, so these do too.
  EffectiveCapsOff caps;
  if (StepResult r = caps.Suspend(WorkerStep::kLandlock)) return r;
  UniqueFd made = CreateRuleset(plan);
  int err = made.valid() ? 0 : errno;
  // why above the bootstrap's fd: the run's 6 and 7 arrive later, and are refused if
  // those numbers are taken (EEXIST).
  UniqueFd ruleset(err == 0 ? fcntl(made.get(), F_DUPFD_CLOEXEC, kWorkerBootstrapFd + 1) : -1);
  if (err == 0 && !ruleset.valid()) err = errno;
  if (err == 0) err = ahead.ops.Load(OperatorDirs());
  if (err == 0) err = AddRules(ruleset.get(), plan, -1, ahead.ops, false, &ahead.walked);
  if (StepResult r = caps.Restore(WorkerStep::kLandlock)) return r;
  if (err != 0) return Failed(err);
  ahead.ruleset = std::move(ruleset);
  return StepOk();
}

StepResult ApplyLandlock(const RunSpec& spec, int skill_dir_fd, LandlockAhead& ahead) {
  const LandlockPlan plan = BuildLandlockPlan(spec);
  if (plan.abi == 0) {
    ahead.ruleset.reset();
    return StepOk();
  }
  OperatorIds ops;
  if (int err = ops.Load(OperatorDirs()); err != 0) return Failed(err);
  // why: rules made ahead that something since would have decided otherwise (an
  // operator's directory made or mounted, an entry of a walked directory made, renamed
  // or removed) are not used; the whole ruleset is made now, as without them.
  const bool made_ahead = ahead.ruleset.valid() && AheadStillHolds(ahead, ops);
  UniqueFd ruleset = made_ahead ? std::move(ahead.ruleset) : CreateRuleset(plan);
  ahead.ruleset.reset();
  if (!ruleset.valid()) return Failed(errno);
  if (int err = AddRules(ruleset.get(), plan, skill_dir_fd, ops, made_ahead, nullptr); err != 0)
    return Failed(err);
  if (landlock::RestrictSelf(ruleset.get()) != 0) return Failed(errno);
  return StepOk();
}

}  // namespace skillmcp::worker
