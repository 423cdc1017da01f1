#include "broker/run/scratch_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "broker/run/run_fs_ids.h"

namespace skillmcp {
namespace {

struct Entry {
  std::string name;
  bool is_dir;
};

// The entries of `fd` (without . and ..), read once; `fd` itself stays open.
bool ListEntries(int fd, std::vector<Entry>& out) {
  int copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return false;
  DIR* d = fdopendir(copy);
  if (!d) {
    close(copy);
    return false;
  }
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out.push_back({std::move(name), S_ISDIR(st.st_mode)});
  }
  closedir(d);
  return true;
}

// Opens a subdirectory without following a link; a directory the run made unreadable
// (its own, so we may) is made searchable first, through its O_PATH descriptor.
int OpenSubdir(int parent, const std::string& name) {
  int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 || errno != EACCES) return fd;
  int path_fd = openat(parent, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (path_fd < 0) return -1;
  const std::string proc = "/proc/self/fd/" + std::to_string(path_fd);
  const int rc = chmod(proc.c_str(), 0700);  // the magic link is the inode, never a path
  close(path_fd);
  if (rc != 0) return -1;
  return openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// One pass: removes what it can beneath `fd`; directories found at the depth limit are
// moved up to `top` (renamed within the same filesystem) for the next pass.
void EmptyPass(int fd, int top, int depth, unsigned& moved, bool& failed) {
  fchmod(fd, 0700);  // unlinking inside needs write and search on the directory
  std::vector<Entry> entries;
  if (!ListEntries(fd, entries)) {
    failed = true;
    return;
  }
  for (const Entry& e : entries) {
    if (!e.is_dir) {
      if (unlinkat(fd, e.name.c_str(), 0) != 0 && errno != ENOENT) failed = true;
      continue;
    }
    if (depth >= kMaxRemoveDepth) {
      const std::string to = ".deep." + std::to_string(moved++);
      if (renameat(fd, e.name.c_str(), top, to.c_str()) != 0) failed = true;
      continue;
    }
    int sub = OpenSubdir(fd, e.name);
    if (sub < 0) {
      failed = true;
      continue;
    }
    EmptyPass(sub, top, depth + 1, moved, failed);
    close(sub);
    if (unlinkat(fd, e.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) failed = true;
  }
}

}  // namespace

bool EmptyDirectory(int dir_fd) {
  unsigned moved = 0;
  // Each pass removes kMaxRemoveDepth levels of every tree; a bound on passes keeps a
  // directory that cannot be emptied (a file that will not go) from looping for ever.
  for (int pass = 0; pass < 4096; ++pass) {
    bool failed = false;
    const unsigned before = moved;
    EmptyPass(dir_fd, dir_fd, 0, moved, failed);
    if (moved == before) return !failed;
  }
  return false;
}

std::unique_ptr<ScratchDir> ScratchDir::Create(const std::string& base, bool as_run_ids,
                                               uid_t uid, gid_t gid) {
  std::unique_ptr<ScratchDir> s(new ScratchDir());
  s->as_run_ids_ = as_run_ids;
  s->uid_ = uid;
  s->gid_ = gid;
  s->removed_ = true;  // nothing to remove until it is made; errno stays the cause
  s->parent_.reset(open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!s->parent_.valid()) return nullptr;
  RunFsIds ids(as_run_ids, uid, gid);
  if (!ids.ok()) {
    errno = EPERM;
    return nullptr;
  }
  std::string tmpl = base + "/skill-mcp-run.XXXXXX";
  // why: mkdtemp makes a fresh, unpredictable name with mode 0700 and never reuses an
  // existing entry, so nothing another user placed in the base can be taken over.
  if (!mkdtemp(tmpl.data())) return nullptr;
  s->path_ = tmpl;
  s->name_ = tmpl.substr(tmpl.rfind('/') + 1);
  s->dir_.reset(openat(s->parent_.get(), s->name_.c_str(),
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!s->dir_.valid()) {
    const int err = errno;
    unlinkat(s->parent_.get(), s->name_.c_str(), AT_REMOVEDIR);
    errno = err;
    return nullptr;
  }
  s->removed_ = false;
  return s;
}

ScratchDir::~ScratchDir() { Remove(); }

bool ScratchDir::Remove() {
  if (removed_) return true;
  RunFsIds ids(as_run_ids_, uid_, gid_);
  if (!ids.ok()) return false;
  // Beneath the descriptor opened when it was made: whatever the run renamed or linked
  // in its place since, only the directory the run was given is emptied.
  bool empty = EmptyDirectory(dir_.get());
  struct stat by_fd {}, by_name {};
  // The name is removed only while it still is that directory.
  if (fstat(dir_.get(), &by_fd) == 0 &&
      fstatat(parent_.get(), name_.c_str(), &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
      by_fd.st_dev == by_name.st_dev && by_fd.st_ino == by_name.st_ino) {
    if (unlinkat(parent_.get(), name_.c_str(), AT_REMOVEDIR) != 0) empty = false;
  }
  removed_ = empty;
  return empty;
}

}  // namespace skillmcp
