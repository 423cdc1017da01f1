// The run's scratch directory, its TMPDIR: made by the broker for each run, mode 0700 and
// owned by the run's uid and gid, and removed with everything in it once the run is over.
// With a uid switch the broker makes and removes it with its filesystem ids set to the
// run's (setfsuid/setfsgid, this thread only, restored at once), so it needs no
// CAP_CHOWN nor any access to what the run left. Removal works beneath descriptors and
// never follows a link (docs/isolation.md, "The scratch directory").
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "shared/unique_fd.h"

namespace skillmcp {

class ScratchDir {
 public:
  // Makes "<base>/skill-mcp-run.XXXXXX". With `as_run_ids`, as uid/gid (filesystem ids
  // only). nullptr with errno set when it cannot.
  static std::unique_ptr<ScratchDir> Create(const std::string& base, bool as_run_ids, uid_t uid,
                                            gid_t gid);
  ~ScratchDir();  // Remove()
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  uid_t uid() const { return uid_; }

  // Removes the tree and the directory. True when nothing is left. Idempotent.
  bool Remove();

 private:
  ScratchDir() = default;
  std::string path_;
  std::string name_;  // the last component, beneath parent_
  UniqueFd parent_;   // the base directory
  UniqueFd dir_;      // the scratch directory itself, opened when made
  bool as_run_ids_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool removed_ = false;
};

// Pure of any identity switch: empties the directory `dir_fd` (never following a link,
// making the run's own unreadable directories searchable first). A tree deeper than
// kMaxRemoveDepth is flattened by moving its deep directories up to `dir_fd`, so the
// number of open descriptors stays bounded whatever the run built. True when empty.
inline constexpr int kMaxRemoveDepth = 64;
bool EmptyDirectory(int dir_fd);

}  // namespace skillmcp
