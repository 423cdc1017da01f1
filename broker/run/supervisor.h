// One skill_run at a time, supervised on the broker's event loop: the run description
// from a PreparedRun, the worker started by broker/run/spawn.h, then drain stdout/stderr,
// watch the report pipe and the pidfd, enforce the timeout (SIGTERM to the group, SIGKILL
// 2 s later) and settle on the run's end (the end the worker reports on fd 4 once node is
// reaped, or its own exit) plus a 250 ms drain, under a hard deadline of timeout + 3.25 s.
// A worker still exiting after its reported end, or anything of its run still dying after
// the settle's kill, is reaped from the loop afterwards, with the run's uid held and no
// worker started ahead until then. Until the run ends the run's memory in all is sampled every
// kRunMemorySampleMs or 10 x a sample's cost (broker/run/run_memory.h); past the limit,
// or with more processes than a sample can read, the group gets SIGKILL at once. Hands back a
// plain RunResult; nothing here blocks the loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/harden/env_store.h"
#include "broker/loop/event_loop.h"
#include "broker/run/launch_config.h"
#include "broker/run/reaper.h"
#include "broker/run/run_uids.h"
#include "broker/run/runner.h"
#include "broker/run/scratch_dir.h"
#include "broker/run/worker_pool.h"
#include "shared/unique_fd.h"

namespace skillmcp {

struct RunMemorySample;  // broker/run/run_memory.h

inline constexpr int64_t kKillGraceMs = 2000;          // SIGTERM -> SIGKILL
inline constexpr int64_t kDrainMs = 250;               // after the worker exited
inline constexpr int64_t kHardDeadlineExtraMs = 3250;  // timeout + this: settle whatever happens
inline constexpr int64_t kShutdownReapMs = 3000;       // at exit, for leftovers to die

class RunSupervisor : public Runner {
 public:

  // `loop`, `config` and `env` must outlive the supervisor. SIGPIPE must be ignored
  // (HardenProcess does it): the spec is written to a pipe the worker may have closed.
  RunSupervisor(EventLoop& loop, const LaunchConfig& config, const EnvStore& env);
  ~RunSupervisor() override;  // KillAndReapNow()
  RunSupervisor(const RunSupervisor&) = delete;
  RunSupervisor& operator=(const RunSupervisor&) = delete;

  bool Busy() const override { return run_ != nullptr; }

  // Starts a run of the prepared script descriptor. nullopt when started (on_done is
  // then called exactly once, from the loop), or why not (busy, runs unavailable, an
  // unacceptable description, a failed system call): on_done is not called then.
  std::optional<StartRefusal> Start(PreparedRun run, Done on_done) override;
  // `commit` is called once the uid lease, the scratch directory, the description and the
  // worker are all in place, before the worker is sent what to run; on false the worker is
  // killed unfed and everything is given back (broker/run/runner.h).
  std::optional<StartRefusal> StartCommitted(PreparedRun run, Commit commit, Done on_done) override;

  // Kills the run's whole process group; the run then settles as usual (signal SIGKILL).
  void Cancel() override;

  // Starts a worker ahead of the first run (from the loop, right away): call once runs
  // are possible. After each run the next one is started the same way.
  void Prestart();

  // Shutdown (client gone, SIGTERM): SIGKILL to the group, drop the run, then kill and
  // reap every child left (the run's and earlier runs' leftovers), waiting at most
  // kShutdownReapMs. on_done is not called. Nothing a run started outlives its client.
  void KillAndReapNow();

  // Leftovers of finished runs still dying (tests).
  size_t leftovers() const { return reaper_.left(); }
  // Runs answered with their worker, or something they left, not reaped yet (tests).
  size_t finishing() const { return finishing_.size(); }

  pid_t pid() const;  // the worker's pid while a run is active, else -1 (tests)
  pid_t waiting_pid() const { return pool_.waiting_pid(); }  // the started-ahead worker (tests)

 private:
  struct Run;
  // A run that has been answered while its worker, or something it left, is still dying,
  // until the reaper finds nothing left: it keeps the run's uid (broker/run/run_uids.h)
  // and the next worker waits for it.
  struct FinishingWorker {
    pid_t pid = -1;
    UniqueFd pidfd;
    std::optional<RunUidLease> uid_lease;
    EventLoop::TimerId warn_timer = 0;  // says so once if it does not exit
  };
  // What an answered run leaves to release once its answer is out: its scratch directory,
  // then its uid (unless a FinishingWorker holds it), in that order (ReleaseEnded).
  struct EndedRun {
    std::unique_ptr<ScratchDir> scratch;
    std::optional<RunUidLease> uid_lease;
  };
  // why this order: a later run under that uid must never find the directory. Called after
  // the answer, and first thing when a run starts (one started from the answer itself).
  void ReleaseEnded();
  void OnPipe(int which, uint32_t events);
  void OnSpecWritable();
  void OnReport(uint32_t events);
  void OnExit();
  void Ended(int code, int status);  // the worker's exit or its reported end: the run is over
  void AwaitReaping(Run& r, bool watch_worker);
  void OnFinished(int pidfd);
  void FinishingReaped();  // once the reaper is clear: the leases go back, Prestart
  void OnTimeout();
  void OnMemorySample();
  void KillForMemory(const RunMemorySample& sample);
  std::vector<pid_t> RunRoots() const;
  void SignalGroup(int sig);
  void MaybeSettle();
  void Settle();
  RunResult Result(Run& r) const;
  void Teardown();

  EventLoop& loop_;
  const LaunchConfig& config_;
  const EnvStore& env_;
  std::unique_ptr<Run> run_;
  WorkerPool pool_;  // the worker the next run takes
  EventLoop::TimerId refill_timer_ = 0;
  Reaper reaper_;  // kills and reaps what finished runs leave behind
  std::vector<std::unique_ptr<FinishingWorker>> finishing_;
  std::optional<EndedRun> ended_;
  bool memory_blind_warned_ = false;  // the run's root was unreadable in /proc once
};

}  // namespace skillmcp
