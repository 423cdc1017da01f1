#include "broker/loop/dir_watch.h"

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <set>

namespace skillmcp {
namespace {

// Every way the scan's result can change: entries made, removed or renamed, a file
// written, a mode or link count changed; and the directory itself removed or moved.
constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                           IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

DirWatch::~DirWatch() {
  if (fd_.valid()) loop_.RemoveFd(fd_.get());
}

bool DirWatch::Open(std::function<void()> changed) {
  changed_ = std::move(changed);
  fd_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd_.valid()) return false;
  if (!loop_.AddFd(fd_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); })) {
    fd_.reset();
    return false;
  }
  return true;
}

void DirWatch::OnReadable() {
  alignas(inotify_event) char buf[16384];
  bool seen = false;
  for (;;) {
    ssize_t n = read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t at = 0; at < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      // IN_IGNORED follows a watch Sync removed (or a directory gone, which its own
      // IN_DELETE_SELF already reported): nothing new.
      if ((ev->mask & IN_IGNORED) == 0) seen = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  if (seen && changed_) changed_();
}

DirWatchSync DirWatch::Sync(const std::vector<std::string>& dirs, size_t limit) {
  DirWatchSync out;
  std::set<std::string> wanted;
  for (const std::string& d : dirs) {
    if (wanted.count(d) != 0) continue;
    if (wanted.size() >= limit) {
      ++out.over_limit;
      continue;
    }
    wanted.insert(d);
  }
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (wanted.count(it->first) != 0) {
      ++it;
      continue;
    }
    inotify_rm_watch(fd_.get(), it->second);
    it = watches_.erase(it);
  }
  for (const std::string& d : wanted) {
    // Added again even when watched: a directory replaced under the same path has a new
    // inode, and the call returns the existing descriptor when it has not.
    int wd = inotify_add_watch(fd_.get(), d.c_str(), kMask);
    if (wd < 0) {
      if (errno == ENOSPC) out.kernel_limit = true;
      ++out.refused;
      watches_.erase(d);
      continue;
    }
    watches_[d] = wd;
  }
  out.watched = watches_.size();
  return out;
}

}  // namespace skillmcp
