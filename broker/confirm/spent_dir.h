// The spent-token record shared by every broker that signs with one key (docs/wire.md
// §6): with MCP_CONFIRM_SECRET set, a token spent on one connection must be spent
// for every other connection and after a restart, so the record lives on disk.
//
//   <state dir>/spent-tokens/<32 hex digits of the nonce>-<expiry, unix seconds>
//
// One empty file per spent nonce, created with O_EXCL: creation is atomic across processes,
// so of two brokers spending one token at once exactly one succeeds. Files are pruned a
// while after their token expired. Every directory is opened with O_NOFOLLOW and checked
// (owner, mode) before it is trusted; later operations use openat() on the open descriptor.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "broker/grants/env_lookup.h"
#include "broker/harden/state_dir.h"
#include "shared/unique_fd.h"

namespace skillmcp {

using TokenNonce = std::array<unsigned char, 16>;

inline constexpr std::string_view kSpentSubdir = "spent-tokens";
// A record stays this long after its token expired, so a wall clock stepped back a little
// on one broker never revives a token another broker has already pruned.
inline constexpr int64_t kPruneGraceSeconds = 600;
// How often (at most) the directory is scanned for expired records.
inline constexpr int64_t kPruneEverySeconds = 60;
// How often (at most) a full record is rescanned early.
inline constexpr int64_t kFullPruneEverySeconds = 5;
// Live records beyond which new spends are refused rather than growing the directory.
inline constexpr size_t kMaxSharedSpent = 65536;

class SpentDir {
 public:
  enum class State { kUnspent, kSpent, kFull, kFailed };

  struct Opened {
    std::unique_ptr<SpentDir> dir;
    std::string error;  // set when dir is null: why the directory cannot be trusted or made
  };

  // Opens (creating with mode 0700 where missing) `base` + each of `subdirs`, then
  // "spent-tokens". `base` must be absolute.
  static Opened Open(const std::string& base, std::initializer_list<std::string_view> subdirs);

  // kSpent when a record for the nonce exists, kUnspent when not, kFailed (with `error`)
  // when that cannot be told.
  State Lookup(const TokenNonce& nonce, int64_t expiry, std::string* error);
  // Records the spend: kUnspent when this call created the record, kSpent when another
  // spend did first, kFull, or kFailed (with `error`).
  State Record(const TokenNonce& nonce, int64_t expiry, int64_t now, std::string* error);

  const std::string& path() const { return path_; }
  size_t live_count() const { return live_; }
  size_t max_live() const { return max_live_; }
  // Tests only: a smaller cap, so that a full record takes a few files, not 65536.
  void set_max_live_for_test(size_t max_live) { max_live_ = max_live; }

 private:
  SpentDir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  void MaybePrune(int64_t now);

  UniqueFd fd_;
  std::string path_;
  int64_t last_prune_ = 0;
  size_t live_ = 0;  // records seen at the last prune plus the ones made since
  size_t max_live_ = kMaxSharedSpent;
};

// Where the shared record lives, in order: SKILL_MCP_STATE_DIR, $STATE_DIRECTORY (systemd
// StateDirectory=), a root-started broker's `host` default (broker/harden/state_dir.h),
// $XDG_RUNTIME_DIR/skill-mcp. Error when none is set.
SpentDir::Opened OpenSpentDirFromEnv(const GetFn& get, const HostStateDefault& host = {});

}  // namespace skillmcp
