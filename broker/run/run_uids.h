// Own identity per run (docs/isolation.md, "Own identity per run"): wherever the broker
// can switch uids, each run gets a uid of its own from a range no other allocator of a
// Debian host uses, and keeps the run-as group. Allocation is host-wide: one lock file per
// uid in the state directory every broker shares (broker/harden/state_dir.h), locked with
// an open-file-description lock (F_OFD_SETLK, never waiting), which the kernel releases
// when the broker's descriptor is closed, a crash included. A free lock is not enough: a
// uid is handed out only when no process of it exists (InUseFn, broker/run/uid_probe.h),
// so a run that outlived a killed broker keeps its uid from everyone else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shared/unique_fd.h"

namespace skillmcp {

struct RunUidRange {
  uint32_t first = 0;
  uint32_t last = 0;
  uint64_t size() const { return uint64_t{last} - first + 1; }
  bool contains(uint32_t uid) const { return uid >= first && uid <= last; }
};

// Why this default: systemd's UIDS-GIDS document leaves 1879048192-2147483647 unused
// between its container ranges (524288-1879048191) and the upper half; Debian's policy
// gives 65536-4294967293 to local dynamic allocation that adduser does not use, and its
// useradd hands out subordinate ids from 100000 to 600100000 only. 65536 uids.
inline constexpr RunUidRange kDefaultRunUidRange{1879048192u, 1879113727u};

// Why: the worker started ahead for the next run takes its uid when it starts, so the
// uid's probe (two forks; about 3.4 ms a run on a slower 2-core guest) is off the run's
// path, and then each connection holds a uid while it waits. A range this large is not
// used up that way; a smaller one keeps its uids for running scripts (the uid is taken
// when the run starts).
inline constexpr uint64_t kUidsAheadMinRange = 4096;

// Pure: "A-B" with decimal A <= B, both in 1..2147483647 and the range holding none of
// 65534 (nobody) and 65535 (16-bit -1). nullopt with `why` otherwise.
std::optional<RunUidRange> ParseRunUidRange(std::string_view text, std::string* why);

// Pure: true when every uid of `range` lies in one of the inside ranges of a
// /proc/self/uid_map text ("inside outside count" lines).
bool RangeMapped(std::string_view uid_map, RunUidRange range);

// One allocated uid. Move-only; destroying it releases the lock.
class RunUidLease {
 public:
  RunUidLease(uint32_t uid, UniqueFd lock) : uid_(uid), lock_(std::move(lock)) {}
  uint32_t uid() const { return uid_; }

 private:
  uint32_t uid_;
  UniqueFd lock_;  // holds the OFD write lock on <dir>/<uid>
};

class RunUidPool {
 public:
  // True when a process of `uid` exists, or when that cannot be told (fail closed).
  using InUseFn = std::function<bool(uint32_t uid)>;

  // `dir` is the checked O_RDONLY directory descriptor of <state dir>/run-uids.
  RunUidPool(UniqueFd dir, std::string path, RunUidRange range, InUseFn in_use)
      : dir_(std::move(dir)), path_(std::move(path)), range_(range), in_use_(std::move(in_use)) {}

  struct Acquired {
    std::optional<RunUidLease> lease;
    std::string error;  // why no uid is free, when !lease
  };
  // A free uid of the range, starting at a random one (a uid is seldom handed to the
  // next run at once). Never blocks on a lock.
  Acquired Acquire();

  // How many uids of the range some broker holds now (lock files whose lock is taken).
  uint64_t CountHeld() const;

  RunUidRange range() const { return range_; }
  const std::string& path() const { return path_; }

 private:
  UniqueFd dir_;
  std::string path_;
  RunUidRange range_;
  InUseFn in_use_;
};

// At most this many uids with a free lock but live processes are probed per Acquire.
inline constexpr int kMaxProbesPerAcquire = 32;

}  // namespace skillmcp
