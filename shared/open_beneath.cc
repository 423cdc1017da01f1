#include "shared/open_beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace skillmcp {
namespace {

// A race is about one in twenty-five lookups under a tight rename loop on this kind of
// machine (tests/unit/shared/open_beneath_test.cc reproduces it); 64 in a row do not happen.
constexpr int kEagainRetries = 64;

UniqueFd WalkNoFollow(int dirfd, const std::string& rel, int flags) {
  UniqueFd cur(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
  if (!cur) return {};
  size_t start = 0;
  while (true) {
    size_t slash = rel.find('/', start);
    std::string seg = rel.substr(start, slash == std::string::npos ? std::string::npos
                                                                   : slash - start);
    if (seg.empty() || seg == "." || seg == "..") {
      errno = EXDEV;
      return {};
    }
    bool last = slash == std::string::npos;
    int f = last ? flags : (O_PATH | O_DIRECTORY);
    int extra = (f & O_PATH) ? 0 : O_NOCTTY;
    UniqueFd next(openat(cur.get(), seg.c_str(), f | extra | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return {};
    cur = std::move(next);
    if (last) return cur;
    start = slash + 1;
  }
}

}  // namespace

UniqueFd OpenBeneath(int dirfd, std::string_view rel, int flags) {
  std::string path(rel);
  if (path.empty() || path.find('\0') != std::string::npos) {
    errno = EINVAL;
    return {};
  }
  open_how how{};
  // openat2 refuses O_NOCTTY together with O_PATH (EINVAL); it only matters for
  // descriptors that can become a controlling terminal, which O_PATH ones cannot.
  int extra = (flags & O_PATH) ? O_CLOEXEC : (O_CLOEXEC | O_NOCTTY);
  how.flags = static_cast<uint64_t>(flags | extra);
  // Why: RESOLVE_BENEATH makes escape impossible at open time (no check-then-use race);
  // NO_MAGICLINKS stops /proc/self/fd-style links from jumping out.
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd = -1;
  // Why: with RESOLVE_BENEATH the kernel answers EAGAIN when any rename or mount on the
  // host raced a lookup through "..", and asks the caller to retry; a link such as
  // "../references/guide.md" would otherwise vanish from a listing or fail a read while
  // unrelated work renames files. Bounded, so a rename storm cannot spin the caller.
  for (int attempt = 0; attempt < kEagainRetries; ++attempt) {
    fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  // Why: a kernel before 5.6 answers ENOSYS, and container seccomp profiles written
  // before openat2 existed answer ENOSYS or EPERM. The walk is safe on its own (no
  // symlink followed, no ".."), so falling back loses symlinks inside a skill, never
  // containment.
  if (errno != ENOSYS && errno != EPERM) return {};
  return WalkNoFollow(dirfd, path, flags);
}

UniqueFd OpenRegularBeneath(int dirfd, std::string_view rel) {
  UniqueFd fd = OpenBeneath(dirfd, rel, O_RDONLY | O_NONBLOCK);
  if (!fd) return {};
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return {};
  // Why: the check is on the opened descriptor, so what was checked is what is read.
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return {};
  }
  // Reads are bounded by size, so clear O_NONBLOCK for plain regular-file reads.
  int fl = fcntl(fd.get(), F_GETFL);
  if (fl >= 0) fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

}  // namespace skillmcp
