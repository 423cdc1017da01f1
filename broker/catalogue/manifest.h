// The bundle walk: every regular file beneath a skill's directory descriptor, with its
// size, as '/'-separated relative paths in collation order.
//
// Decisions (each tested):
// - Resolution is relative to descriptors only (openat/fstatat, OpenBeneath for links).
// - A symlink whose target stays inside the skill is listed under the link's path (a
//   linked directory is walked); one leaving the skill is `symlink-escape`, left out.
//   A link back to a directory being walked (a loop) is not followed again. Dangling
//   links and non-regular files (FIFOs, sockets, devices) are left out: the read tools
//   only serve regular files.
// - A name that is not valid UTF-8 or fails CheckRelativePath (backslash, `%41`, blank
//   segment, over 1024 bytes...) is `unusable-path`; a directory with such a name is left
//   out with everything beneath it.
// - Over kMaxFilesPerSkill files or kMaxDirsPerSkill directories the walk stops
//   (`file-limit`); entries are visited in byte order, depth first, so the result is
//   deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/catalogue/skill.h"

namespace skillmcp {

struct ManifestResult {
  std::vector<ManifestFile> files;  // collated by path
  uint64_t bytes = 0;
  std::vector<Problem> problems;
  bool stopped = false;  // the walk hit a limit (`file-limit`): `files` is not the bundle
};

// `skill_dir` is an O_PATH directory descriptor; `source` its path as reached from the
// configured root (only shown in problems).
ManifestResult WalkManifest(int skill_dir, const std::string& source);

// `s` with every byte that is not part of valid UTF-8 written as \xNN, for problem paths.
std::string DisplaySafe(std::string_view s);

}  // namespace skillmcp
