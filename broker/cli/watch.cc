#include "broker/cli/watch.h"

#include <sys/inotify.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "broker/catalogue/scan.h"
#include "broker/catalogue/watch_set.h"
#include "shared/log.h"
#include "shared/unique_fd.h"

namespace skillmcp {

LiveCatalogue::LiveCatalogue(EventLoop& loop, Boot& b, McpServer& server)
    : b_(b),
      server_(server),
      watch_(loop),
      // On the rescan thread: b_.roots is fixed once the boot scan is done, and the
      // catalogue served is only replaced on the loop, by Apply, after this returns.
      rescan_(loop, [this]() -> std::function<void()> {
        auto fresh = std::make_shared<Catalogue>(ScanCatalogue(b_.roots.paths, b_.roots.from));
        DirWatchSync sync = watch_.Sync(WatchedDirs(b_.roots.paths, *fresh), kMaxWatchedDirs);
        return [this, fresh, sync] { Apply(std::move(*fresh), sync); };
      }) {}

bool LiveCatalogue::Open(std::string* why) {
  if (!watch_.Open([this] { rescan_.Changed(); })) {
    *why = std::string("inotify is not available: ") + std::strerror(errno);
    return false;
  }
  if (!rescan_.Open()) {
    *why = std::string("cannot wait for rescans: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void LiveCatalogue::Start() {
  rescan_.RunNow([this]() -> std::function<void()> {
    DirWatchSync sync = watch_.Sync(WatchedDirs(b_.roots.paths, b_.catalogue), kMaxWatchedDirs);
    return [this, sync] { Note(sync); };
  });
}

void LiveCatalogue::Apply(Catalogue fresh, DirWatchSync sync) {
  Note(sync);
  const size_t skills = fresh.skills.size();
  const int sent =
      server_.SwapCatalogue([this, &fresh] { ReplaceCatalogue(b_, std::move(fresh)); });
  LOG_INFO("skills rescanned after a change: %zu skill(s), %zu problem(s); %d list_changed sent",
           skills, b_.catalogue.problems.size() + b_.grants.problems.size(), sent);
}

void LiveCatalogue::Note(const DirWatchSync& sync) {
  const bool short_of = sync.over_limit > 0 || sync.kernel_limit;
  if (short_of && !limit_noted_) {
    LOG_WARN("the skills watch covers %zu directories; changes in %zu more are not seen (%s)",
             sync.watched, sync.over_limit + sync.refused,
             sync.kernel_limit ? "fs.inotify.max_user_watches is reached"
                               : "past skill-mcp's bound of 4096");
  }
  limit_noted_ = short_of;
}

std::string DescribeWatch(const Boot& b) {
  if (b.watch == WatchSetting::kOff)
    return "off (SKILL_MCP_WATCH=off)\n    the skills are read once; no list_changed is sent";
  UniqueFd probe(inotify_init1(IN_CLOEXEC));
  if (!probe.valid()) {
    return std::string(b.watch == WatchSetting::kOn ? "refused" : "off") +
           "\n    inotify is not available: " + std::strerror(errno);
  }
  const size_t dirs = WatchedDirs(b.roots.paths, b.catalogue).size();
  std::string out = "on (inotify)\n    " + std::to_string(std::min(dirs, kMaxWatchedDirs)) +
                    " directories watched; lists rescanned " + std::to_string(kRescanQuietMs) +
                    " ms after the last change";
  if (dirs > kMaxWatchedDirs) {
    out += "\n    changes in " + std::to_string(dirs - kMaxWatchedDirs) +
           " more directories are not seen (at most " + std::to_string(kMaxWatchedDirs) + ")";
  }
  return out;
}

}  // namespace skillmcp
