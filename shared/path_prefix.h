// Containment of one absolute path in another by their strings alone, for paths that are
// already real (resolved by the kernel or realpath): the broker's skills roots and module
// directories (broker/run/module_dirs.cc) and the worker's covers (worker/namespaces.cc).
// Nothing is resolved here; a path that could hold a symlink needs OpenBeneath() as well.
#pragma once

#include <string_view>

namespace skillmcp {

// Whether `path` is `dir` or lies beneath it: "/a/b" and "/a/b/c" are in "/a/b", "/a/bc"
// is not, and everything absolute is in "/". Both are expected normalised (absolute, no
// trailing '/' but for "/" itself, no "//", "." or ".."), as real paths are. why an empty
// `dir` holds nothing: a missing directory must never read as "everything".
bool IsSameOrBeneath(std::string_view path, std::string_view dir);

// Whether `path` is absolute and normalised as a real path is: no NUL, no empty ("//"),
// "." or ".." component, no trailing '/' but for "/" itself.
bool IsNormalisedAbsolutePath(std::string_view path);

}  // namespace skillmcp
