// Small whole-file reads (/proc and /sys entries) and path resolution, for the broker
// and the worker alike.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// Reads the whole file at `path` into `out` (EINTR retried). At most `cap` bytes: a
// longer, runaway file fails with EFBIG rather than growing without bound. False with
// `*err` set on failure.
bool ReadSmallFile(const char* path, std::string* out, int* err, size_t cap = 64u << 20);

// realpath(3) as a string; "" when it cannot be resolved (errno set).
std::string RealPath(const std::string& path);

// The items with `separator` between them.
std::string Join(const std::vector<std::string>& items, std::string_view separator);

}  // namespace skillmcp
