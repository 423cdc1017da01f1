#include "worker/operator_ids.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "shared/unique_fd.h"

namespace skillmcp::worker {
namespace {

bool Has(const std::vector<DirId>& ids, DirId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The path the kernel gives the directory open at `fd` (no permission needed on it).
int PathOf(int fd, std::string& out) {
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf));
  if (n < 0) return errno;
  // why: a path the kernel could not give whole (too long, unlinked, unreachable from
  // this root) cannot be walked: fail rather than grant without knowing.
  if (n == sizeof(buf) || buf[0] != '/') return ENAMETOOLONG;
  out.assign(buf, static_cast<size_t>(n));
  if (out.size() > 10 && out.compare(out.size() - 10, 10, " (deleted)") == 0) return ESTALE;
  return 0;
}

// Calls `each` with the identity of every directory above `path` (a real path), nearest
// first, until it returns true; stat, not open: the run-as user may not search the
// directory itself (/etc/credstore is 0700), only the ones above it.
template <typename Fn>
int ForEachAbove(std::string path, Fn each) {
  while (path.size() > 1) {
    const size_t slash = path.rfind('/');
    path.resize(slash == 0 ? 1 : slash);
    struct stat st {};
    if (fstatat(AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
    // why: a real path has no symlink on the way; one there now was swapped in since.
    if (!S_ISDIR(st.st_mode)) return ESTALE;
    if (each(IdOf(st))) return 0;
  }
  return 0;
}

}  // namespace

int OperatorIds::Load(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    UniqueFd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
      // why: absent, not a directory, or out of the calling user's reach by that path:
      // nothing of it can be reached through a rule on the path either. Only root could
      // make one mid-run, after this look (docs/isolation.md).
      if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP) continue;
      return errno;
    }
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return errno;
    if (Has(dirs_, IdOf(st))) continue;
    dirs_.push_back(IdOf(st));
    std::string real;
    if (int err = PathOf(fd.get(), real); err != 0) return err;
    // Stops at a directory already known: the ones above it are recorded too.
    if (int err = ForEachAbove(real, [this](DirId id) {
          if (Has(above_, id)) return true;
          above_.push_back(id);
          return false;
        });
        err != 0)
      return err;
  }
  return 0;
}

bool OperatorIds::IsOperatorDir(DirId id) const { return Has(dirs_, id); }
bool OperatorIds::IsAbove(DirId id) const { return Has(above_, id); }

int OperatorIds::AtOrBeneath(int fd, bool& found) const {
  found = false;
  if (dirs_.empty()) return 0;
  struct stat st {};
  if (fstat(fd, &st) != 0) return errno;
  if (IsOperatorDir(IdOf(st))) {
    found = true;
    return 0;
  }
  std::string real;
  if (int err = PathOf(fd, real); err != 0) return err;
  return ForEachAbove(real, [&](DirId id) {
    found = IsOperatorDir(id);
    return found;
  });
}

}  // namespace skillmcp::worker
