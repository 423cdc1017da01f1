#include "worker/module_dir.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp::worker {
namespace {

constexpr int kFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// The fallback: one component at a time from `base`, none of them followed if a symlink
// (O_NOFOLLOW with O_DIRECTORY: a symlink is ENOTDIR, never its target).
UniqueFd WalkNoSymlinks(int base, const std::string& rel) {
  UniqueFd cur(openat(base, ".", kFlags));
  size_t start = 0;
  while (cur.valid() && start < rel.size()) {
    const size_t slash = rel.find('/', start);
    const size_t end = slash == std::string::npos ? rel.size() : slash;
    const std::string name = rel.substr(start, end - start);
    // why: the paths are the broker's real paths; "." or ".." would be something else.
    if (name.empty() || name == "." || name == "..") {
      errno = ENOENT;
      return {};
    }
    cur.reset(openat(cur.get(), name.c_str(), kFlags));
    start = end + 1;
  }
  return cur;
}

UniqueFd OpenNoSymlinks(int base, const std::string& path, uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<uint64_t>(kFlags);
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | resolve;
  const long fd = syscall(SYS_openat2, base, path.empty() ? "." : path.c_str(), &how, sizeof how);
  if (fd >= 0) return UniqueFd(static_cast<int>(fd));
  // why the fallback: kernels before 5.6 and older container seccomp profiles answer
  // ENOSYS or EPERM; the walk follows no symlink either.
  if (errno != ENOSYS && errno != EPERM) return {};
  if (base != AT_FDCWD) return WalkNoSymlinks(base, path);
  UniqueFd root(open("/", kFlags));
  if (!root.valid()) return {};
  return WalkNoSymlinks(root.get(), path.substr(1));
}

}  // namespace

UniqueFd OpenDirNoSymlinks(const std::string& path) { return OpenNoSymlinks(AT_FDCWD, path, 0); }

UniqueFd OpenDirNoSymlinksBeneath(int base, const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') {
    errno = EINVAL;
    return {};
  }
  return OpenNoSymlinks(base, rel, RESOLVE_BENEATH);
}

UniqueFd OpenModuleDir(const ModuleDir& dir) {
  const std::string& path = dir.path;
  if (path.empty() || path[0] != '/') {
    errno = ENOENT;
    return {};
  }
  // why no symlink anywhere: a node_modules planted as a link (to "/", say) would grant
  // or bind its target; a link's target is judged by the rules of where it lies.
  return CheckModuleDir(OpenDirNoSymlinks(path), dir);
}

UniqueFd CheckModuleDir(UniqueFd fd, const ModuleDir& dir) {
  if (!fd.valid()) return {};
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return {};
  // why (re-checked here, on the descriptor that is granted or bound, after the broker's
  // own check of the path): a directory another user may write could be filled with
  // code that every run's require() then loads. The owner cannot be re-checked here: in
  // the run's user namespace every id but the run's own reads as the overflow id.
  if (!S_ISDIR(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    errno = EPERM;
    return {};
  }
  // why: the broker checked the owner of the directory at this path (the worker cannot);
  // another directory renamed into its place since is not the one checked.
  if (static_cast<uint64_t>(st.st_dev) != dir.dev || static_cast<uint64_t>(st.st_ino) != dir.ino) {
    errno = ESTALE;
    return {};
  }
  return fd;
}

bool IsSkippedModuleDirError(int err) {
  // why ESTALE skipped, not fatal: a directory swapped since the broker's check is
  // treated as one that fails the worker's own check: no rule, no bind.
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP || err == EPERM ||
         err == ESTALE;
}

}  // namespace skillmcp::worker
