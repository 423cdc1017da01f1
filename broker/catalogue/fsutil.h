// Small descriptor-relative filesystem helpers for discovery. Everything is resolved
// relative to an open directory descriptor; strings are only joined for display.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/unique_fd.h"

namespace skillmcp {

// Reads the entry names of the directory `dirfd` refers to (an O_PATH descriptor is fine),
// without `.` and `..`, sorted by bytes. At most `max_names` are read (readdir order
// decides which when there are more; `*more` is set). False with errno on failure.
bool ReadDirNames(int dirfd, size_t max_names, std::vector<std::string>* names, bool* more);

// The absolute path the kernel holds for an open descriptor (via /proc/self/fd), or,
// without /proc, realpath(`fallback`) when it names the same inode.
std::optional<std::string> RealPathOfFd(int fd, const std::string& fallback);

// `path` made absolute against the working directory (lexically; no resolution).
std::string AbsolutePath(const std::string& path);

std::string BaseName(std::string_view path);

// `child` equals `parent` or lies beneath it (component-wise, on real paths).
bool IsSameOrInside(std::string_view child, std::string_view parent);

// Display join: "a" + "/" + "b" (no doubled '/').
std::string JoinPath(std::string_view a, std::string_view b);

// Reads at most `cap` bytes from fd; `*more` when the file has more. False with errno.
bool ReadCapped(int fd, size_t cap, std::string* out, bool* more);

}  // namespace skillmcp
