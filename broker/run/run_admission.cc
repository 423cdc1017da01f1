#include "broker/run/run_admission.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "broker/run/scratch_dir.h"

namespace skillmcp {

StartRefusal SystemRefusal(std::string what, int err) {
  return StartRefusal{StartProblem::kSystem, std::move(what), err};
}

StartRefusal RefuseUnfed(const Spawned& worker, Reaper& reaper, StartRefusal why) {
  // why: the worker has not been told what to run (the description goes down fd 3 only
  // after admission), so killing it now runs nothing; the scratch directory and then the
  // lease go back as the caller drops them (a uid whose worker is not reaped yet is not
  // handed out again: RunUidPool::Acquire finds its process), the reaper collects the worker.
  syscall(SYS_pidfd_send_signal, worker.pidfd.get(), SIGKILL, nullptr, 0);
  reaper.Sweep();
  return why;
}

Admission AdmitWorker(WorkerPool& pool, const LaunchConfig& config, Reaper& reaper,
                      const PinnedInterpreter& interpreter) {
  Admission a;
  // A worker started ahead (broker/run/worker_pool.h) or now, told its cell and holding
  // run-independent descriptors only; the script and skill directory go with its
  // description. From a large range it took its own uid already.
  TakeOutcome taken = pool.Take(interpreter);
  if (!taken.worker) {
    // why: each run under its own uid where the pool exists; never a silent fallback to
    // the shared run-as uid when the range is exhausted.
    if (!taken.no_uid.empty())
      a.refusal = StartRefusal{StartProblem::kUnavailable, taken.no_uid};
    else
      a.refusal =
          SystemRefusal("could not start the worker (" + taken.error.call + ")", taken.error.err);
    return a;
  }
  PooledWorker& w = *taken.worker;
  // why: each run under its own uid where the pool exists, from a small range taken now
  // (kUidsAheadMinRange); never a silent fallback to the shared run-as uid.
  if (config.run_uids && !w.uid_lease) {
    RunUidPool::Acquired got = config.run_uids->Acquire();
    if (!got.lease) {
      a.refusal =
          RefuseUnfed(w.spawned, reaper, StartRefusal{StartProblem::kUnavailable, got.error});
      return a;
    }
    w.uid_lease = std::move(got.lease);
  }
  const uint32_t uid = w.uid_lease ? w.uid_lease->uid() : config.uid;
  // why: each run gets its own TMPDIR, owned by its uid, that no other run shares: the
  // one made with its worker for that very uid, or a new one.
  if (w.scratch && w.scratch->uid() != uid) w.scratch.reset();
  if (!w.scratch)
    w.scratch = ScratchDir::Create(config.scratch_base, config.switch_ids, uid, config.gid);
  if (!w.scratch) {
    const int err = errno;
    a.refusal = RefuseUnfed(
        w.spawned, reaper,
        SystemRefusal("could not make the run's scratch directory in " + config.scratch_base +
                          (config.switch_ids ? " as uid " + std::to_string(uid) : ""),
                      err));
    return a;
  }
  a.worker = std::move(taken.worker);
  a.uid = uid;
  return a;
}

}  // namespace skillmcp
