// Finding skill directories under the configured roots (docs/wire.md §1).
//
// Layouts: `<root>/SKILL.md` (the root is the one skill, named after the root's real
// directory name), else `<root>/<name>/SKILL.md` and `<root>/skills/<name>/SKILL.md`
// (a `skills` directory holding its own SKILL.md is itself a skill named `skills`).
//
// Decisions (each tested):
// - Entries whose name starts with '.' (`.git`, `.github`, ...) are not candidates and are
//   skipped silently, unopened.
// - Non-directory entries (README.md, LICENSE, ...) are not candidates. A symlink whose
//   target does not exist (or loops) is reported `symlink-escape`. A directory whose
//   SKILL.md is missing or is itself a directory is reported `no-skill-md`.
// - A candidate reached through a symlink is served under its target's real directory
//   name when that lies inside the root's real path, else `symlink-escape`.
// - Problem paths are built on the root's real path (the skill's own problems, later, on
//   the skill's real directory); a root's `no-skill-md` problems follow its others.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "broker/catalogue/skill.h"
#include "shared/unique_fd.h"

namespace skillmcp {

struct Candidate {
  std::string name;    // the real directory's name: the name it is served under
  std::string root;    // the root it was found under, as configured
  std::string path;    // the root's real path + entry names, for problems of the entry
  std::string source;  // real absolute path
  UniqueFd dir;        // O_PATH|O_DIRECTORY|O_CLOEXEC on `source`
  dev_t dev = 0;
  ino_t ino = 0;
  size_t root_index = 0;  // which configured root found it (set by the scan)
};

// Appends the candidates found under one root, in discovery order: the root itself when it
// is a skill (then nothing under it is examined), else the `<root>/<name>` skills, then the
// `<root>/skills/<name>` skills, each group collated by name (collate.h). Problems met on
// the way are appended in the same order.
// At most kMaxRootEntries entries of one directory are examined.
void FindCandidates(const std::string& root, std::vector<Candidate>* candidates,
                    std::vector<Problem>* problems);

// Why: a root with a huge directory must not stall discovery or grow memory unbounded.
inline constexpr size_t kMaxRootEntries = 4096;
// Each candidate holds a descriptor until it is loaded; past this many (over all roots)
// further directories are reported `skill-limit` and not opened, so discovery can never
// run the process out of descriptors.
inline constexpr size_t kMaxCandidates = 512;

}  // namespace skillmcp
