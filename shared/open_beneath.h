// The resolved half of path containment: open a checked relative path beneath an
// open directory descriptor, so nothing can be swapped between check and use.
#pragma once

#include <string_view>

#include "shared/unique_fd.h"

namespace skillmcp {

// Opens `rel` beneath `dirfd` with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS):
// symlinks that stay beneath are followed, anything leaving `dirfd` fails with EXDEV.
// `flags` gets O_CLOEXEC | O_NOCTTY added. Where openat2 is missing (ENOSYS) or
// filtered (EPERM) it falls back to a component walk with O_NOFOLLOW that refuses "..",
// "." and empty components (EXDEV) and every symlink (ELOOP): fails closed.
// The kernel's EAGAIN (a rename or mount raced a lookup through "..") is retried a bounded
// number of times. Returns an invalid fd and sets errno on failure.
UniqueFd OpenBeneath(int dirfd, std::string_view rel, int flags);

// Opens `rel` for reading and checks the open descriptor: a regular file, never a FIFO,
// device or directory (opened O_NONBLOCK so a FIFO cannot hang the open).
// On failure returns an invalid fd and sets errno (EINVAL when not a regular file).
UniqueFd OpenRegularBeneath(int dirfd, std::string_view rel);

}  // namespace skillmcp
