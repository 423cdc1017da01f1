// The whole-run memory bound without cgroups (docs/isolation.md, "Whole-run limits"): the
// supervisor samples the memory of every process of the active run on a loop timer and
// kills the run when the sum passes SKILL_MCP_LIMIT_RUN_MEMORY_MB. This file holds the
// sampler (a bounded walk of /proc from the run's root) and the boot decision whether the
// broker can see its runs in /proc at all.
//
// "Memory of a process" is RssAnon + RssShmem from /proc/<pid>/status: the pages the
// process alone made resident (heap, stacks, Buffers, touched V8 pages) plus the shared
// memory it has mapped. File-backed pages (node's binary, its libraries) are left out:
// they are shared by every node on the host and would be counted once per process.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// Why 50 ms: the overshoot past the limit is about what the run's processes can fault in
// during one period (a node process filling Buffers took 250-330 ms per 100 MiB on the
// loaded 2-core CI host, so about 20 MiB per period each), while one sample of a run of 7
// node processes (56 /proc reads) costs about 0.35 ms of broker CPU, 0.7 % of a core at
// this rate (docs/isolation.md); 25 ms would double that for little. A burst faster than
// the sampling is still bounded by nproc x the per-process data limit.
inline constexpr int64_t kRunMemorySampleMs = 50;

// A ceiling on the /proc reads of one sample whatever RLIMIT_NPROC says, so that one
// sample's CPU stays bounded even with a huge configured nproc.
inline constexpr size_t kRunMemoryMaxVisits = 4096;

// The visit budget of one sample for a run limited to `nproc` processes (and threads):
// one status read per process and one children read per thread reach the whole run
// within 2 x nproc reads, failed reads (a pid that vanished, a stranger skipped) counted
// too; at most kRunMemoryMaxVisits. Pure.
size_t RunMemoryVisitCap(uint64_t nproc);

// The delay before the next sample after one that took `sample_ns` of CLOCK_MONOTONIC:
// kRunMemorySampleMs, or 10 x the sample's cost when that is longer, so that sampling
// never takes more than about 10 % of the broker's event loop however many processes a
// run has (docs/isolation.md, "Whole-run limits"). Pure.
int64_t NextRunMemorySampleMs(int64_t sample_ns);

// One process's part, from the text of its /proc/<pid>/status. Pure.
struct ProcessMemory {
  uint64_t bytes = 0;       // RssAnon + RssShmem
  pid_t ppid = 0;           // its parent, in the pid namespace of that /proc
  bool has_memory = false;  // false for a zombie or a process whose mm is gone
};
std::optional<ProcessMemory> ParseProcessMemory(std::string_view status);

struct RunMemorySample {
  uint64_t bytes = 0;      // summed over the processes counted
  size_t processes = 0;    // processes whose memory was counted (zombies are not)
  size_t visits = 0;       // status and children files read
  bool capped = false;     // the visit cap was reached: the sum is a lower bound
  bool root_seen = false;  // the first root's status could be read
};

// Walks the processes of a run: `roots` (the run's worker first, then the broker's
// adopted children of the run's group) and, through /proc/<pid>/task/*/children, every
// descendant of them, counting each process once. Roots are our unreaped children, so
// their pids are theirs; a descendant is counted only when its status names the parent
// it was found under (a pid that died and was reused meanwhile, or was re-parented, is
// skipped this time and found under its new parent next time); a process that vanishes
// mid-walk is skipped. At most `max_visits` status and children files are read
// (RLIMIT_NPROC counts every thread of the run, so a cap of 2 x nproc reaches all).
RunMemorySample SampleRunMemory(const std::vector<pid_t>& roots, size_t max_visits,
                                const std::string& proc = "/proc");

// What one sample means for the run. kBlind: the run's worker could not be read (no
// verdict); kTooMany: the walk reached its visit cap, so the sum is only a lower bound and
// the processes not reached may hold anything: fail closed, the run is killed.
enum class RunMemoryVerdict { kUnder, kOver, kTooMany, kBlind };
RunMemoryVerdict JudgeRunMemory(const RunMemorySample& sample, uint64_t limit_bytes);

// Why the broker cannot find its runs' descendants, or "" when it can: the walk needs
// <proc>/self/task/<tid>/children, which kernels without CONFIG_PROC_CHILDREN (and gVisor)
// lack; without it only the worker would be seen and the bound would count nothing.
std::string ProcChildrenBlindness(const std::string& proc, pid_t tid);

// Why the broker cannot read its runs' memory on this host, or "" when it can: a /proc
// mounted with hidepid (systemd's ProtectProc=) hides the runs' processes from a broker
// without CAP_SYS_PTRACE (the worker that is the run's root is not dumpable). Pure:
// `mountinfo` is the text of /proc/self/mountinfo, `cap_sys_ptrace` whether the broker
// holds that capability.
std::string RunMemoryBlindness(std::string_view mountinfo, bool cap_sys_ptrace);

// The same for this process (its mountinfo and effective capabilities), and why not when
// its /proc belongs to another pid namespace (/proc/self is not its pid) or has no
// children files (ProcChildrenBlindness).
std::string OwnRunMemoryBlindness();

}  // namespace skillmcp
