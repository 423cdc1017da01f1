// The isolation report: each layer on or off, why, and what would turn it on. Built
// from what really happened at boot (results of the hardening calls, re-read kernel
// state), never from what was intended.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "broker/harden/environ_scrub.h"
#include "broker/harden/privileges.h"
#include "broker/harden/process_harden.h"
#include "broker/harden/run_cgroup.h"

namespace skillmcp {

struct Layer {
  std::string name;  // stable id: "broker-non-dumpable", "environ-wiped", ...
  bool on = false;
  bool demanded = false;  // the configuration requires it (doctor fails when off)
  std::string reason;     // what holds, or why it is off
  std::string enable;     // what would turn it on (empty when on)
};

// Worker-side facts come from the run area's launch configuration.
struct WorkerLayerFacts {
  bool seccomp_configured = true;
  bool namespaces_configured = false;       // runs get their namespaces (auto or on, probe passed)
  bool namespaces_demanded = false;         // SKILL_MCP_NAMESPACES=on
  std::string namespaces_problem;           // demanded, but that cannot work here (the boot probe)
  std::string namespaces_off_reason;        // not demanded and off: why (off, or auto's probe)
  bool fresh_proc = false;                  // namespaced runs get their own /proc
  std::vector<std::string> private_places;  // hidden from namespaced runs (private_places.h)
  std::string fresh_proc_problem;           // why not (the boot probe)
  uint32_t landlock_abi = 0;                // 0: the filesystem allowlist is off
  bool landlock_demanded = false;           // SKILL_MCP_LANDLOCK=on
  std::string landlock_problem;             // why it is off
  // The network (broker/run/network_mode.h): the mode asked for, what it settled on,
  // and what enforces it.
  std::string network_mode = "on";          // SKILL_MCP_NETWORK (LayerFacts sets it)
  bool network_off = false;                 // runs get no network (off, or declared's fallback)
  bool egress_declared = false;             // runs get their own network and allowlist
  std::string network_fallback;             // why declared settled on off
  bool network_seccomp = true;              // the seccomp inet fence can hold off
  bool egress_local = false;                // SKILL_MCP_EGRESS_LOCAL=on
  bool egress_patterns = false;             // SKILL_MCP_EGRESS_ALLOW is set
  std::string run_uids;                     // non-empty: each run gets its own uid (range, free)
  bool run_uids_demanded = false;           // SKILL_MCP_RUN_UIDS names a range
  std::string run_uids_off_reason;          // why runs share one uid
  std::string run_uids_warning;             // on, with a weakness
  std::string run_uids_lock_dir;            // on: the directory of the uid locks
  uint32_t run_gid = 0;                     // the run-as group every run keeps
  // The whole-run memory bound (broker/run/run_memory.h): the limit in MiB (0: off),
  // the sampling period, what bounds a burst between samples, and why it is off.
  uint64_t run_memory_mb = 0;
  bool run_memory_demanded = false;  // SKILL_MCP_LIMIT_RUN_MEMORY_MB names a limit
  int64_t run_memory_sample_ms = 0;
  std::string run_memory_burst;  // e.g. "nproc 256 x data 1024 MiB"
  std::string run_memory_off_reason;
  bool limits_configured = false;
  std::string limits_text;  // e.g. "nproc 64, as 4096 MiB, cpu 300 s, fsize 64 MiB, nofile 256"
  bool runs_possible = false;
  std::string runs_reason;  // why runs are refused (missing interpreter/worker), when they are
  // The pinned interpreters, each with its version where known and its path
  // ("node /usr/bin/node, python3 3.11 /usr/bin/python3.11"; DescribeInterpreters).
  std::string interpreters;
};

struct IsolationFacts {
  ProcessHardening process;
  ScrubResult scrub;
  bool scrub_attempted = false;
  PrivilegeState privileges;
  bool hosted = false;
  bool allow_unscrubbed = false;  // MCP_SKILL_ALLOW_UNSCRUBBED=1
  WorkerLayerFacts worker;
  std::optional<CgroupFacts> cgroup;  // unset: read from the running process
  // Confirmation tokens signed with MCP_CONFIRM_SECRET: where their spends are recorded,
  // and why that record is not host-wide (or cannot be used), when it is not.
  bool shared_tokens = false;
  std::string spent_dir_path;
  std::string spent_dir_problem;
};

std::vector<Layer> ComputeLayers(const IsolationFacts& facts);

// "isolation: on [a, b]; off [c (why), d (why)]" for the boot banner (stderr).
std::string LayersOneLine(const std::vector<Layer>& layers);

// One block per layer for `skill-mcp doctor`.
std::string FormatDoctorReport(const std::vector<Layer>& layers);

// 0 when every demanded layer is on, 1 otherwise.
int DoctorExitCode(const std::vector<Layer>& layers);

// Prints FormatDoctorReport to `out` and returns DoctorExitCode.
int RunDoctor(const IsolationFacts& facts, FILE* out);

}  // namespace skillmcp
