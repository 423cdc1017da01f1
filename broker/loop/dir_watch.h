// Directories watched with inotify on the event loop: any change under a watched
// directory (an entry created, removed, renamed, written or its attributes changed) is
// reported once per readable round, without saying what changed; the caller rescans.
// Nothing here blocks: the descriptor is non-blocking and read to EAGAIN.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "broker/loop/event_loop.h"
#include "shared/unique_fd.h"

namespace skillmcp {

// What Sync managed: how many directories are watched, and why some are not.
struct DirWatchSync {
  size_t watched = 0;
  size_t over_limit = 0;      // left unwatched: past the caller's bound
  size_t refused = 0;         // left unwatched: the kernel refused (gone, no access, ENOSPC)
  bool kernel_limit = false;  // one refusal was ENOSPC: fs.inotify.max_user_watches is reached
};

class DirWatch {
 public:
  explicit DirWatch(EventLoop& loop) : loop_(loop) {}
  ~DirWatch();
  DirWatch(const DirWatch&) = delete;
  DirWatch& operator=(const DirWatch&) = delete;

  // Creates the inotify instance and watches it on the loop; `changed` is called after
  // every read that saw a change (or lost events to a queue overflow). False with errno
  // set when inotify is not available.
  bool Open(std::function<void()> changed);

  // Watches exactly `dirs` (at most `limit` of them, in the order given), dropping the
  // watches of directories no longer listed. Touches only the watch table, never the
  // loop: it may run on another thread, provided no two Syncs run at once.
  DirWatchSync Sync(const std::vector<std::string>& dirs, size_t limit);

 private:
  void OnReadable();

  EventLoop& loop_;
  UniqueFd fd_;
  std::function<void()> changed_;
  std::map<std::string, int> watches_;  // path -> watch descriptor
};

}  // namespace skillmcp
