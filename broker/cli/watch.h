// SKILL_MCP_WATCH: the live catalogue (docs/configuration.md, "SKILL_MCP_WATCH"). The
// broker watches the roots and the skills with inotify, rescans after a quiet moment
// (broker/mcp/rescan.h), replaces the catalogue on the loop, and tells the client which
// lists changed (McpServer::SwapCatalogue).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "broker/cli/boot.h"
#include "broker/loop/dir_watch.h"
#include "broker/mcp/rescan.h"
#include "broker/mcp/server.h"

namespace skillmcp {

// Why a bound: each watch is kernel memory charged to the service user, and a tree of
// thousands of directories would spend fs.inotify.max_user_watches every other process
// of that user needs. Past it, changes in the directories left over are not seen.
inline constexpr size_t kMaxWatchedDirs = 4096;

class LiveCatalogue {
 public:
  LiveCatalogue(EventLoop& loop, Boot& b, McpServer& server);
  // Creates the inotify instance; false with `why` when it cannot be had.
  bool Open(std::string* why);
  // After the boot scan: the first watch set, made off the loop.
  void Start();

 private:
  void Apply(Catalogue fresh, DirWatchSync sync);
  void Note(const DirWatchSync& sync);

  Boot& b_;
  McpServer& server_;
  DirWatch watch_;
  Rescan rescan_;
  bool limit_noted_ = false;
};

// The doctor's line about the watch, for this configuration and catalogue.
std::string DescribeWatch(const Boot& b);

}  // namespace skillmcp
