#include "broker/catalogue/roots.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "broker/catalogue/collate.h"
#include "broker/catalogue/fsutil.h"
#include "broker/catalogue/manifest.h"
#include "broker/catalogue/reasons.h"
#include "broker/catalogue/skill.h"
#include "shared/relpath.h"

namespace skillmcp {
namespace {

// A SKILL.md that is a directory makes no skill (as if it were missing).
bool HasSkillMd(int dirfd) {
  struct stat st {};
  return fstatat(dirfd, kSkillMd, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode);
}

struct RootContext {
  std::string configured;  // as configured: what skills found here show as `source`
  std::string path;        // absolute, as configured (shown only when it has no real path)
  std::string real;        // real path of the root: every problem path is built on it
  std::vector<Candidate>* candidates;
  std::vector<Problem>* problems;

  void Report(const std::string& at, const char* reason, std::string detail) const {
    problems->push_back({DisplaySafe(at), reason, std::move(detail)});
  }
};

// Turns an open directory into a candidate, checking the served name.
void AddCandidate(const RootContext& ctx, UniqueFd dir, const std::string& path,
                  const std::string& real, const std::string& entry_name) {
  std::string name = BaseName(real);
  if (!entry_name.empty() && name != entry_name) {
    // Why: grants name skills, so a link must not let a bundle pick the name it is
    // served under; the target's own name counts and the owner is told.
    ctx.Report(path, reason::kNameMismatch,
               "this link is served as the skill '" + DisplaySafe(name) +
                   "', the name of the directory it points to (" + DisplaySafe(real) +
                   "); write grants against that name");
  }
  if (!IsUsableSkillName(name)) {
    ctx.Report(path, reason::kUnusableName,
               "the directory name '" + DisplaySafe(name) +
                   "' cannot be used as a skill name "
                   "(letters, digits, '.', '_' and '-', starting with a letter or digit, at "
                   "most 64); rename the directory to serve it");
    return;
  }
  struct stat st {};
  // Why reported: a directory is never dropped in silence (roots.h).
  if (fstat(dir.get(), &st) != 0) {
    ctx.Report(path, reason::kUnreadableSkillMd,
               std::string("this directory cannot be inspected (") + std::strerror(errno) +
                   "), so its SKILL.md cannot be read");
    return;
  }
  if (!HasSkillMd(dir.get())) {
    ctx.Report(path, reason::kNoSkillMd,
               "this directory has no SKILL.md, so it is not a skill; add one or move the "
               "directory out of the skills root");
    return;
  }
  Candidate c;
  c.name = name;
  c.root = ctx.configured;
  c.path = path;
  c.source = real;
  c.dir = std::move(dir);
  c.dev = st.st_dev;
  c.ino = st.st_ino;
  ctx.candidates->push_back(std::move(c));
}

// A root's `skills` directory: its skills are the root's third layout, examined after
// the `<root>/<name>` ones.
struct SkillsDir {
  UniqueFd dir;
  std::string path;
};

// Examines `parent`/`entry`; `skills_dir` is non-null where a `skills` directory may hold
// the third layout (it is then handed back instead of being examined).
void Examine(const RootContext& ctx, int parent, const std::string& parent_path,
             const std::string& entry, SkillsDir* skills_dir);

// Collates the candidates from index `first` on: one discovery group (roots.h).
void CollateGroup(const RootContext& ctx, size_t first) {
  auto begin = ctx.candidates->begin() + static_cast<std::ptrdiff_t>(first);
  std::stable_sort(begin, ctx.candidates->end(), [](const Candidate& a, const Candidate& b) {
    return CollateCompare(a.name, b.name) < 0;
  });
}

void ExamineChildren(const RootContext& ctx, int dirfd, const std::string& dir_path, bool subdirs) {
  std::vector<std::string> names;
  bool more = false;
  if (!ReadDirNames(dirfd, kMaxRootEntries, &names, &more)) {
    ctx.Report(dir_path, reason::kRootUnreadable,
               std::string("the directory could not be listed (") + std::strerror(errno) +
                   "); no skill under it is served");
    return;
  }
  if (more) {
    ctx.Report(dir_path, reason::kSkillLimit,
               "the directory has more than " + std::to_string(kMaxRootEntries) +
                   " entries; only the first ones read were examined");
  }
  const size_t first = ctx.candidates->size();
  SkillsDir skills_dir;
  for (const auto& name : names) {
    if (ctx.candidates->size() >= kMaxCandidates) {
      ctx.Report(dir_path, reason::kSkillLimit,
                 "more than " + std::to_string(kMaxCandidates) +
                     " skill directories were "
                     "found; the remaining entries of this directory were not examined");
      break;
    }
    Examine(ctx, dirfd, dir_path, name, subdirs ? &skills_dir : nullptr);
  }
  CollateGroup(ctx, first);
  if (skills_dir.dir) ExamineChildren(ctx, skills_dir.dir.get(), skills_dir.path, false);
}

void Examine(const RootContext& ctx, int parent, const std::string& parent_path,
             const std::string& entry, SkillsDir* skills_dir) {
  // Dot entries (.git, .github) are tooling, never skills: skipped silently, unopened.
  if (entry[0] == '.') return;
  const std::string path = JoinPath(parent_path, entry);
  struct stat lst {};
  if (fstatat(parent, entry.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) return;  // raced
  const bool is_link = S_ISLNK(lst.st_mode);
  if (!is_link && !S_ISDIR(lst.st_mode)) return;  // plain files are not candidates
  UniqueFd dir(openat(parent, entry.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOTDIR) return;  // a link to a file is not a candidate
    if (is_link && (errno == ENOENT || errno == ELOOP)) {
      ctx.Report(path, reason::kSymlinkEscape,
                 "this symlink leads nowhere (its target does not exist or loops), so no "
                 "skill is served through it; fix or remove the link");
    } else {
      ctx.Report(path, reason::kUnreadableSkillMd,
                 std::string("this directory cannot be opened (") + std::strerror(errno) +
                     "), so its SKILL.md cannot be read");
    }
    return;
  }
  std::optional<std::string> real = RealPathOfFd(dir.get(), path);
  if (!real) {
    ctx.Report(path, reason::kUnreadableSkillMd,
               "the real path of this directory cannot be read, so it cannot be checked "
               "against the skills root and is not served");
    return;
  }
  // Why: the root is the boundary the operator chose; a link out of it would serve a
  // directory nobody put under the root.
  if (!IsSameOrInside(*real, ctx.real)) {
    ctx.Report(path, reason::kSymlinkEscape,
               "this symlink leads to " + DisplaySafe(*real) + ", outside the skills root " +
                   DisplaySafe(ctx.real) +
                   "; it is not served. Move the skill inside the root "
                   "or add its directory as a root");
    return;
  }
  if (skills_dir != nullptr && entry == "skills" && !HasSkillMd(dir.get())) {
    *skills_dir = SkillsDir{std::move(dir), *real};
    return;
  }
  AddCandidate(ctx, std::move(dir), path, *real, entry);
}

}  // namespace

void FindCandidates(const std::string& root, std::vector<Candidate>* candidates,
                    std::vector<Problem>* problems) {
  RootContext ctx{root, AbsolutePath(root), "", candidates, problems};
  if (root.empty()) {
    ctx.Report(root, reason::kRootUnreadable,
               "an empty entry in the list of roots names no directory; remove it");
    return;
  }
  UniqueFd dir(open(ctx.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::optional<std::string> real;
  if (dir) real = RealPathOfFd(dir.get(), ctx.path);
  if (!dir || !real) {
    ctx.Report(ctx.path, reason::kRootUnreadable,
               std::string("the skills root cannot be opened as a directory (") +
                   std::strerror(errno) + "); check the path and its permissions");
    return;
  }
  ctx.real = *real;
  const size_t first_problem = problems->size();
  if (HasSkillMd(dir.get())) {
    // The root is the one skill, named after its own (real) directory.
    AddCandidate(ctx, std::move(dir), ctx.real, ctx.real, "");
  } else {
    ExamineChildren(ctx, dir.get(), ctx.real, true);
  }
  // The root's problems met while examining entries come first, its `no-skill-md`
  // directories after them (the reference's order, docs/wire.md §3).
  std::stable_partition(problems->begin() + static_cast<std::ptrdiff_t>(first_problem),
                        problems->end(),
                        [](const Problem& p) { return p.reason != reason::kNoSkillMd; });
}

}  // namespace skillmcp
