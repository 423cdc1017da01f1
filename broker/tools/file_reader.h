// Bounded, race-free reads of bundle files: open beneath the skill's directory fd, check
// the open descriptor, never allocate more than the cap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/unique_fd.h"

namespace skillmcp {

inline constexpr uint64_t kFileEntryCap = 1048576;     // 1 MiB per entry
inline constexpr uint64_t kFileCallBudget = 4194304;   // 4 MiB per skill_file call
inline constexpr size_t kMaxPathsPerCall = 8;
// Messages and tool descriptions state the caps in whole MiB.
static_assert(kFileEntryCap % (1 << 20) == 0 && kFileCallBudget % (1 << 20) == 0);

// An opened bundle file, or the reason it could not be opened (a sentence for a person).
struct OpenedFile {
  UniqueFd fd;
  uint64_t size = 0;
  std::string error;  // empty when fd is valid
};

// String check (CheckRelativePath) first, then OpenRegularBeneath + fstat.
OpenedFile OpenBundleFile(int skill_dir_fd, std::string_view rel_path);

struct FileContent {
  std::string bytes;      // at most `cap` bytes
  bool truncated = false; // the file is larger than what was read
  bool text = false;      // the bytes read (after the cut) hold no NUL and are valid
                          // UTF-8; a cut inside a character makes them binary
};

// Reads at most `cap` bytes from the start of an opened file with pread.
// Returns nullopt (errno set) when reading fails.
std::optional<FileContent> ReadBounded(const OpenedFile& file, uint64_t cap);

// True when `bytes` is valid UTF-8 and holds no NUL byte.
bool IsText(std::string_view bytes);

std::string Base64(std::string_view bytes);

}  // namespace skillmcp
