// What bounds a run as a whole, read from the broker's own cgroup: the "run-cgroup"
// line of the isolation report (docs/isolation.md, "Whole-run limits").
//
// Per-run child cgroups (memory.max, pids.max, cgroup.kill) need a cgroup v2 tree
// delegated to the broker. skill-mcp does not build them: no environment its tests run
// in has such a tree (hosts of this project's CI mount memory and pids as cgroup v1), and
// a layer no test exercises is not shipped. This module says which of the three cases
// holds and what bounds the run and the connection instead.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace skillmcp {

struct CgroupFacts {
  bool v1_memory_or_pids = false;  // memory or pids is bound to a cgroup v1 hierarchy
  bool v2_mounted = false;
  std::string v2_path;             // the broker's cgroup in the v2 tree ("0::<path>")
  bool v2_controllers = false;     // memory and pids are available to that cgroup
  bool v2_delegated = false;       // the broker may create child cgroups there
  std::string connection_bound;    // e.g. "memory.max 512 MiB, pids.max 64"; "" if none
};

// Reads a file's text; false when it cannot (the real one reads /proc and /sys).
using TextReader = std::function<bool(const std::string& path, std::string* text)>;
// Whether a directory may be written by this process (the real one calls access(2)).
using WritableCheck = std::function<bool(const std::string& path)>;

// From the texts of /proc/self/cgroup and /proc/self/mountinfo, plus the cgroup files
// they point at (controllers, memory.max, pids.max, v1 memory.limit_in_bytes).
CgroupFacts ReadCgroupFacts(std::string_view proc_cgroup, std::string_view mountinfo,
                            const TextReader& read, const WritableCheck& writable);

// The same from the running process.
CgroupFacts ReadOwnCgroupFacts();

// The report's reason for the (always off) run-cgroup layer; `own_uid_per_run` when each
// run has a uid of its own (the run-identity layer), which makes nproc a per-run bound.
std::string RunCgroupReason(const CgroupFacts& facts, bool own_uid_per_run = false);

}  // namespace skillmcp
