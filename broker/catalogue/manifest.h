// The bundle walk: every regular file beneath a skill's directory descriptor, with its
// size, as '/'-separated relative paths in collation order.
//
// Decisions (each tested):
// - Resolution is relative to descriptors only (openat/fstatat, never following a link).
// - Every symlink, inside the skill or leading out, is skipped silently: it is neither
//   listed nor counted, and is no problem (skill_file can still read through one that
//   stays inside). Non-regular files (FIFOs, sockets, devices) are left out: the read
//   tools only serve regular files.
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

// `skill_dir` is an O_PATH directory descriptor; `source` its real path, the path every
// problem of the walk names (the entry it is about is in the detail).
ManifestResult WalkManifest(int skill_dir, const std::string& source);

// `s` with every byte that is not part of valid UTF-8 written as \xNN, for problem paths.
std::string DisplaySafe(std::string_view s);

}  // namespace skillmcp
