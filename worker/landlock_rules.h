// The run's Landlock ruleset as data (pure: no system call), so that what a run may reach
// is testable on its own; worker/landlock.h applies it. docs/isolation.md, "The filesystem
// allowlist", is the prose of the same list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/worker_protocol.h"

namespace skillmcp::worker {

struct LandlockPathRule {
  std::string path;      // absolute; empty for the skill directory (from_skill_fd)
  bool from_skill_fd = false;  // the rule is opened from fd 7, the checked directory
  uint64_t access = 0;   // within LandlockPlan::handled_fs
  bool required = false;  // a missing path fails the step (else it is skipped)
  // Named by the operator or the broker (MCP_DATA_DIR, the scratch directory, node's
  // prefix), not a fixed system path: one that is, or lies in, an operator's directory
  // (worker/operator_dirs.h) fails the step. Every rule that would reach one is granted
  // around it (worker/landlock.cc).
  bool named = false;
  // A node_modules directory (RunSpec::read_dirs): opened without following any symlink
  // and checked (worker/module_dir.h); one that fails is skipped.
  bool module_dir = false;
  uint64_t module_dev = 0;  // with module_dir: the directory the broker checked
  uint64_t module_ino = 0;
  // No run changes it (the system's directories and devices, the CPU list, node's
  // directory): a worker started ahead adds it while it waits (CellSpec::landlock_ahead).
  bool ahead = false;
};

struct LandlockPlan {
  uint32_t abi = 0;           // the ABI the masks below are for (<= landlock::kKnownAbi)
  uint64_t handled_fs = 0;    // every filesystem right the ABI knows: denied unless allowed
  uint64_t handled_net = 0;   // TCP bind and connect with SKILL_MCP_NETWORK=off, else 0
  uint64_t scoped = 0;        // signals and abstract unix sockets (ABI 6+)
  size_t attr_size = 0;       // how much of landlock::RulesetAttr this ABI reads
  std::vector<LandlockPathRule> rules;
};

// Every filesystem right ABI `abi` knows (0 for 0).
uint64_t HandledFsAccess(uint32_t abi);

// The filesystem rights a rule on a non-directory may carry (the kernel refuses others).
uint64_t FileOnlyAccess(uint64_t access);

// The ruleset for `spec` (spec.landlock_abi > 0): the system read and execute (without
// the operator's directories, worker/operator_dirs.h, wherever a rule would reach them),
// the devices, /proc and the CPU list, the skill (fd 7) and the module directories read-only,
// the scratch directory and MCP_DATA_DIR read-write. A plain rule beneath another that
// grants at least the same rights is left out (node's prefix /usr: the system's /usr).
LandlockPlan BuildLandlockPlan(const RunSpec& spec);

// The part of BuildLandlockPlan that a worker started ahead makes while it waits: the
// same ABI masks, and the rules marked `ahead` of any run with these three values. The
// run adds the rest. A rule of this part that the whole plan leaves out as covered by
// one of the run's (an MCP_DATA_DIR of /dev covers the devices) grants nothing that rule
// does not, so the two parts allow what the whole plan allows.
LandlockPlan BuildLandlockAheadPlan(uint32_t landlock_abi, bool network_off,
                                    const std::string& node_dir_path);

}  // namespace skillmcp::worker
