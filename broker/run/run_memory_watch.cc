#include "broker/run/run_memory_watch.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "broker/run/reaper.h"
#include "broker/run/run_memory.h"
#include "shared/log.h"

namespace skillmcp {

std::vector<pid_t> RunProcessRoots(pid_t worker, pid_t spare) {
  std::vector<pid_t> roots{worker};
  // Without a pid namespace a run's orphans re-parent to us (the subreaper) and stay in
  // the run's group (the seccomp filter refuses setsid and setpgid): they are the run's.
  // Our unreaped children keep their pids, so none of these is a stranger.
  for (pid_t child : ListChildren())
    if (child != worker && child != spare && getpgid(child) == worker) roots.push_back(child);
  return roots;
}

RunMemoryWatch::RunMemoryWatch(EventLoop& loop, const LaunchConfig& config, Roots roots, Kill kill)
    : loop_(loop), config_(config), roots_(std::move(roots)), kill_(std::move(kill)) {}

void RunMemoryWatch::Start(pid_t worker) {
  Stop();
  worker_ = worker;
  peak_.reset();
  // why: the run's memory in all is bounded even where no cgroup can do it
  // (docs/isolation.md, "Whole-run limits"); a loop timer, never a blocking wait.
  if (config_.run_memory_bytes > 0)
    timer_ = loop_.AddTimer(kRunMemorySampleMs, [this] { Sample(); });
}

void RunMemoryWatch::Stop() {
  if (timer_) loop_.CancelTimer(timer_);
  timer_ = 0;
}

void RunMemoryWatch::Sample() {
  timer_ = 0;
  // why: once the run has ended (its end reported, or the worker exited) what it left is killed
  // at its settling, and a kill now would put "killed for memory" next to a normal exit in the
  // receipt.
  const std::vector<pid_t> roots = roots_();
  if (roots.empty()) return;
  // RLIMIT_NPROC counts every thread: one status read per process and one children read
  // per thread reach a whole run within 2 x nproc reads.
  timespec t0{}, t1{};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const RunMemorySample sample = SampleRunMemory(roots, RunMemoryVisitCap(config_.limits.nproc));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (sample.root_seen) peak_ = std::max(peak_.value_or(0), sample.bytes);
  const int64_t took_ns =
      (int64_t{t1.tv_sec} - t0.tv_sec) * 1000000000 + (int64_t{t1.tv_nsec} - t0.tv_nsec);
  switch (JudgeRunMemory(sample, config_.run_memory_bytes)) {
    case RunMemoryVerdict::kBlind:
      // The worker is our child and unreaped until the run settles, so its /proc entry
      // exists: not readable means /proc hides it (boot found no hidepid; it changed since).
      // Say so once.
      if (!blind_warned_)
        LOG_WARN(
            "cannot read the run's processes in /proc: its memory in all is not bounded "
            "(SKILL_MCP_LIMIT_RUN_MEMORY_MB)");
      blind_warned_ = true;
      return;
    case RunMemoryVerdict::kTooMany:
    case RunMemoryVerdict::kOver:
      KillForMemory(sample);
      return;
    case RunMemoryVerdict::kUnder:
      break;
  }
  // why: the next sample waits 10 x this one's cost at least (docs/isolation.md), so a run
  // of thousands of processes cannot make sampling eat the broker's loop.
  timer_ = loop_.AddTimer(NextRunMemorySampleMs(took_ns), [this] { Sample(); });
}

void RunMemoryWatch::KillForMemory(const RunMemorySample& sample) {
  const MemoryKill kill{config_.run_memory_bytes, sample.bytes, sample.processes,
                        sample.capped ? sample.visits : 0};
  if (sample.capped)
    LOG_INFO("run of worker %d killed: more processes than one sample can read (%zu reads)",
             static_cast<int>(worker_), sample.visits);
  else
    LOG_INFO("run of worker %d killed: %llu MiB in %zu processes, over the %llu MiB limit",
             static_cast<int>(worker_), static_cast<unsigned long long>(sample.bytes >> 20),
             sample.processes, static_cast<unsigned long long>(config_.run_memory_bytes >> 20));
  kill_(kill);
}

}  // namespace skillmcp
