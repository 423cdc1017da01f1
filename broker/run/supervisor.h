// One skill_run at a time on the broker's event loop: a worker admitted with its uid and
// scratch directory (run_admission.h) is sent the run's description, its pipes are drained,
// the timeout is enforced (SIGTERM to the group, SIGKILL 2 s later) and the run settles on
// its end plus a short drain, under a hard deadline. Why a hard deadline and no blocking
// wait: the call always returns and the loop keeps serving, whatever the script's
// descendants do. Meanwhile its memory in all is watched (run_memory_watch.h); what is
// still dying after the answer keeps its uid (finishing_workers.h). Hands back a plain
// RunResult.
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
#include "broker/run/egress_client.h"
#include "broker/run/finishing_workers.h"
#include "broker/run/launch_config.h"
#include "broker/run/reaper.h"
#include "broker/run/run_memory_watch.h"
#include "broker/run/run_uids.h"
#include "broker/run/runner.h"
#include "broker/run/scratch_dir.h"
#include "broker/run/worker_pool.h"
#include "shared/unique_fd.h"

namespace skillmcp {

struct SupervisedRun;

inline constexpr int64_t kKillGraceMs = 2000;          // SIGTERM -> SIGKILL
inline constexpr int64_t kDrainMs = 250;               // after the worker exited
inline constexpr int64_t kHardDeadlineExtraMs = 3250;  // timeout + this: settle whatever happens
// After the run's end, the longest the receipt waits for the run's mirror to send its last
// egress reports and exit (its own bounds: worker/egress_relay.h, kEgressFinish*).
inline constexpr int64_t kEgressReportsMs = 2000;

class RunSupervisor : public Runner {
 public:
  // `loop`, `config` and `env` must outlive the supervisor. SIGPIPE must be ignored
  // (HardenProcess does it): the spec is written to a pipe the worker may have closed.
  RunSupervisor(EventLoop& loop, const LaunchConfig& config, const EnvStore& env);
  ~RunSupervisor() override;  // KillAndReapNow()
  RunSupervisor(const RunSupervisor&) = delete;
  RunSupervisor& operator=(const RunSupervisor&) = delete;

  bool Busy() const override { return run_ != nullptr; }

  // Starts a run of the prepared script descriptor (broker/run/runner.h): nullopt when
  // started, or why not (busy, runs unavailable, an unacceptable description, a failed
  // system call). `commit` is called once the uid lease, the scratch directory, the
  // description and the worker are all in place, before the worker is sent what to run;
  // on false the worker is killed unfed and everything is given back.
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

  // The egress helper's client every declared run's connections go through
  // (broker/run/run_egress.h); null (none reachable) refuses each such connection.
  void UseEgressClient(EgressClient* client) { egress_client_ = client; }
  // A child of the broker's that is no run's leftover (the egress helper it started):
  // the reaper spares the pid `child` returns (-1: none).
  void SpareChild(std::function<pid_t()> child) { reaper_.SpareAlso(std::move(child)); }

  pid_t pid() const;  // the worker's pid while a run is active, else -1 (tests)
  pid_t waiting_pid() const { return pool_.waiting_pid(); }  // the started-ahead worker (tests)

 private:
  using Run = SupervisedRun;  // broker/run/supervised_run.h
  // What an answered run leaves to release once its answer is out: its scratch directory,
  // then its uid (unless FinishingWorkers holds it), in that order (ReleaseEnded).
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
  void OnTimeout();
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
  Reaper reaper_;               // kills and reaps what finished runs leave behind
  FinishingWorkers finishing_;  // answered runs with something still dying
  RunMemoryWatch memory_;       // the active run's memory in all
  std::optional<EndedRun> ended_;
  EgressClient* egress_client_ = nullptr;
};

}  // namespace skillmcp
