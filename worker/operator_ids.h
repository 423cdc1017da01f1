// The operator's directories (worker/operator_dirs.h) as the kernel knows them: the
// device and inode of each that exists and of every directory above it. Landlock's
// rules are decided by these identities, never by how a path is spelled, so that a rule
// reaching one through "/usr/local/", "//", ".." or a symlink (/lib -> usr/lib) is still
// granted around it (worker/landlock.cc; docs/isolation.md, "The operator's configuration").
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

namespace skillmcp::worker {

struct DirId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const DirId& o) const { return dev == o.dev && ino == o.ino; }
};

inline DirId IdOf(const struct stat& st) { return {st.st_dev, st.st_ino}; }

class OperatorIds {
 public:
  // Looks up each of `dirs` as the calling user (0, or the errno that fails the step).
  int Load(const std::vector<std::string>& dirs);

  bool empty() const { return dirs_.empty(); }
  bool IsOperatorDir(DirId id) const;   // one of them (a symlink to one: its target)
  bool IsAbove(DirId id) const;         // a directory one of them lies beneath
  // Whether the directory open at `fd` is one of them or lies beneath one (0, or errno).
  int AtOrBeneath(int fd, bool& found) const;
  // The same directories found, in the same order (a lookup made earlier still holds).
  bool operator==(const OperatorIds&) const = default;

 private:
  std::vector<DirId> dirs_, above_;
};

}  // namespace skillmcp::worker
