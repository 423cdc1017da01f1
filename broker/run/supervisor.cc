#include "broker/run/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "broker/run/run_admission.h"
#include "broker/run/run_description.h"
#include "broker/run/run_outcome.h"
#include "broker/run/scratch_dir.h"
#include "broker/run/spawn.h"
#include "broker/run/supervised_run.h"
#include "shared/log.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

constexpr size_t kReadChunk = 65536;
constexpr int kMaxReadsPerEvent = 16;  // one busy stream cannot starve the others

int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

bool SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void RemoveScratch(std::unique_ptr<ScratchDir>& scratch) {
  if (scratch && !scratch->Remove())
    LOG_WARN("the run's scratch directory %s could not be removed entirely",
             scratch->path().c_str());
  scratch.reset();
}

}  // namespace

RunSupervisor::RunSupervisor(EventLoop& loop, const LaunchConfig& config, const EnvStore& env)
    : loop_(loop),
      config_(config),
      env_(env),
      pool_(config),
      reaper_(loop, [this] { return run_ && !run_->settling ? run_->pid : -1; }),
      finishing_(loop, reaper_, [this] { Prestart(); }),
      memory_(
          loop, config,
          [this] {
            // why: once the run has ended what it left is killed at Settle, not for memory.
            if (!run_ || run_->settling || run_->memory_kill || run_->exited)
              return std::vector<pid_t>{};
            return RunProcessRoots(run_->pid, pool_.waiting_pid());
          },
          [this](const MemoryKill& kill) {
            run_->memory_kill = kill;
            // why: SIGKILL at once by the timeout's path (the group, the namespace's init
            // with it): a SIGTERM grace would let the run keep growing for kKillGraceMs.
            SignalGroup(SIGKILL);
          }) {
  reaper_.SpareAlso([this] { return pool_.waiting_pid(); });
  reaper_.WhenClear([this] { finishing_.ReaperClear(); });
  // why: orphans of a run re-parent to us instead of init, so none outlives its run.
  if (!BecomeSubreaper())
    LOG_WARN_ERRNO("cannot become the runs' child subreaper; a run's orphans outlive it");
}

RunSupervisor::~RunSupervisor() {
  if (refill_timer_) loop_.CancelTimer(refill_timer_);
  KillAndReapNow();
}

void RunSupervisor::Prestart() {
  if (refill_timer_) return;
  refill_timer_ = loop_.AddTimer(0, [this] {
    refill_timer_ = 0;
    // why: a worker waits only while no run is active, so no run's processes ever share
    // the host with the next run's worker (a run that started in the same loop round as
    // the previous one ended gets its refill when it ends), nor beside a worker still
    // exiting from the last run (its refill comes when it is reaped).
    if (run_ || !finishing_.empty()) return;
    pool_.Refill();
  });
}

pid_t RunSupervisor::pid() const { return run_ ? run_->pid : -1; }

std::optional<StartRefusal> RunSupervisor::StartCommitted(PreparedRun prepared, Commit commit,
                                                          Done on_done) {
  // why: one run at a time bounds what a client can make the host do.
  if (Busy()) return StartRefusal{StartProblem::kBusy};
  ReleaseEnded();  // a run started from the last one's answer: nothing of that run is left
  if (!config_.ready()) return StartRefusal{StartProblem::kUnavailable, config_.refusal};
  // why: fail closed; no run starts before the boot probe decided its namespace layers
  // (serve holds skill_run until then, so this is a second line).
  if (config_.namespaces_pending)
    return StartRefusal{StartProblem::kUnavailable, "the namespace probe has not finished yet"};
  // why: fail closed; a run started before the skills directories are known would be
  // built with nothing hidden and see every other skill (SetHiddenRoots).
  if (config_.hidden_roots_pending)
    return StartRefusal{StartProblem::kUnavailable, "the skills have not been scanned yet"};
  // why: fail closed; a run started before the policy is compiled would carry no filter.
  if (config_.seccomp_pending)
    return StartRefusal{StartProblem::kUnavailable, "the seccomp policy is not compiled yet"};
  // why: the descriptor that was checked and hashed is the one that runs; without it
  // nothing runs (there is no path to fall back to).
  if (!prepared.script_fd.valid()) return SystemRefusal("the checked script descriptor", EBADF);

  // why: only an interpreter of this deployment's set, pinned at boot, ever runs.
  const PinnedInterpreter* interpreter = config_.Interpreter(prepared.interpreter);
  if (interpreter == nullptr)
    return StartRefusal{StartProblem::kUnavailable,
                        "the interpreter \"" + prepared.interpreter + "\" is not pinned here"};
  Admission admitted = AdmitWorker(pool_, config_, reaper_, *interpreter);
  if (!admitted.worker) return admitted.refusal;
  PooledWorker& w = *admitted.worker;
  Spawned& s = w.spawned;
  std::optional<std::string> encoded =
      EncodeRunDescription(prepared, *interpreter, config_, env_, w.scratch->path(), admitted.uid);
  if (!encoded) return RefuseUnfed(s, reaper_, StartRefusal{StartProblem::kBadDescription});
  // The declared network mode: a channel between the run's mirror and this broker, over
  // which the run asks for each connection (broker/run/run_egress.h).
  UniqueFd egress_ends[2];
  if (config_.egress_declared) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      const int err = errno;
      WipeString(*encoded);
      return RefuseUnfed(s, reaper_, SystemRefusal("the run's egress channel", err));
    }
    egress_ends[0].reset(pair[0]);
    egress_ends[1].reset(pair[1]);
  }
  if (commit && !commit()) {
    WipeString(*encoded);
    return RefuseUnfed(s, reaper_,
                       StartRefusal{StartProblem::kUnavailable, "withdrawn before it started"});
  }
  auto run = std::make_unique<Run>();
  if (egress_ends[0].valid()) {
    run->egress_run_end = std::move(egress_ends[1]);
    run->egress = std::make_unique<RunEgress>(loop_, egress_client_,
                                              prepared.egress.value_or(std::vector<EgressRule>{}),
                                              config_.egress, std::move(egress_ends[0]));
    run->egress->WhenClosed([this] { MaybeSettle(); });
  }
  run->start_ms = EventLoop::NowMs();
  run->pid = s.pid;
  run->pidfd = std::move(s.pidfd);
  run->out_r = std::move(s.out);
  run->err_r = std::move(s.err);
  run->report_r = std::move(s.report);
  run->spec_w = std::move(s.spec);
  run->spec_bytes = std::move(*encoded);
  run->prepared = std::move(prepared);
  run->scratch = std::move(w.scratch);
  run->uid_lease = std::move(w.uid_lease);
  run->uid = admitted.uid;
  run->done = std::move(on_done);
  for (const UniqueFd* fd : {&run->out_r, &run->err_r, &run->report_r, &run->spec_w})
    SetNonBlocking(fd->get());
  run_ = std::move(run);

  loop_.AddFd(run_->out_r.get(), EPOLLIN, [this](uint32_t ev) { OnPipe(1, ev); });
  loop_.AddFd(run_->err_r.get(), EPOLLIN, [this](uint32_t ev) { OnPipe(2, ev); });
  loop_.AddFd(run_->report_r.get(), EPOLLIN, [this](uint32_t ev) { OnReport(ev); });
  loop_.AddFd(run_->pidfd.get(), EPOLLIN, [this](uint32_t) { OnExit(); });
  loop_.AddFd(run_->spec_w.get(), EPOLLOUT, [this](uint32_t) { OnSpecWritable(); });
  int64_t timeout = run_->prepared.timeout_ms;
  run_->timeout_timer = loop_.AddTimer(timeout, [this] { OnTimeout(); });
  // why: the call always returns, whatever the script's descendants do.
  run_->hard_timer = loop_.AddTimer(timeout + kHardDeadlineExtraMs, [this] {
    run_->hard_timer = 0;
    Settle();
  });
  memory_.Start(run_->pid);
  OnSpecWritable();
  return std::nullopt;
}

void RunSupervisor::OnSpecWritable() {
  if (!run_ || !run_->spec_w.valid()) return;
  Run& r = *run_;
  while (r.spec_off < r.spec_bytes.size()) {
    // why: the descriptors that were checked (the sealed script, the opened skill
    // directory) travel with the first bytes, so the worker has them before any step
    // of its run (its cell's steps came before, worker/main.cc).
    ssize_t n = r.fds_sent
                    ? write(r.spec_w.get(), r.spec_bytes.data() + r.spec_off,
                            r.spec_bytes.size() - r.spec_off)
                    : SendRunDescription(r.spec_w.get(), r.spec_bytes, r.prepared.script_fd.get(),
                                         r.prepared.skill_dir_fd,
                                         r.egress_run_end.valid() ? r.egress_run_end.get() : -1);
    if (n > 0) r.fds_sent = true;
    // why: the worker holds its own copy now; the broker keeps only its end, so the
    // channel closes when the run's mirror is gone.
    if (n > 0) r.egress_run_end.reset();
    if (n > 0) {
      r.spec_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;  // the loop calls again when there is room
    break;                                 // EPIPE: the worker is gone; its exit tells the rest
  }
  r.egress_run_end.reset();  // not sent: the channel closes with nothing on it
  loop_.RemoveFd(r.spec_w.get());
  r.spec_w.reset();  // EOF ends the worker's read
  WipeString(r.spec_bytes);
}

void RunSupervisor::OnPipe(int which, uint32_t) {
  if (!run_) return;
  Run& r = *run_;
  UniqueFd& fd = which == 1 ? r.out_r : r.err_r;
  StreamCapture& cap = which == 1 ? r.out : r.err;
  bool& eof = which == 1 ? r.out_eof : r.err_eof;
  if (!fd.valid()) return;
  char buf[kReadChunk];
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      // Past the cap the bytes are counted and dropped: reading on keeps the pipe empty.
      cap.Append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    loop_.RemoveFd(fd.get());
    fd.reset();
    eof = true;
    MaybeSettle();
    return;
  }
}

void RunSupervisor::OnReport(uint32_t) {
  if (!run_ || !run_->report_r.valid()) return;
  Run& r = *run_;
  char buf[64];
  bool eof = false;
  for (;;) {
    ssize_t n = read(r.report_r.get(), buf, sizeof buf);
    if (n > 0) {
      // why: bounded; the longest the worker writes (a report, then the run's end) and
      // a byte more are kept, so a longer answer still fails the strict decode instead
      // of passing as its first frames.
      if (r.report_buf.size() <= kWorkerFramesMaxBytes)
        r.report_buf.append(
            buf, std::min(static_cast<size_t>(n), kWorkerFramesMaxBytes + 1 - r.report_buf.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    eof = !(n < 0 && errno == EAGAIN);
    break;
  }
  if (eof) {
    loop_.RemoveFd(r.report_r.get());
    r.report_r.reset();
    r.report_eof = true;
  }
  // The run's end, as the process that reaped node wrote it (worker/cell.h): the run is
  // over, though the worker may still be tearing its namespaces down.
  if (!r.exited) {
    std::optional<WorkerFrames> frames = DecodeWorkerFrames(r.report_buf);
    if (frames && frames->exit) {
      r.end_reported = true;
      Ended(frames->exit->code, frames->exit->value);
    }
  }
  MaybeSettle();
}

void RunSupervisor::OnExit() {
  if (!run_ || run_->exited) return;
  Run& r = *run_;
  siginfo_t info{};
  // WNOWAIT: the zombie keeps the pid (and so the process group id) from being reused
  // until Settle has signalled the group; Settle reaps.
  if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(r.pidfd.get()), &info,
             WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return;
  Ended(info.si_code, info.si_status);
  MaybeSettle();
}

void RunSupervisor::Ended(int code, int status) {
  Run& r = *run_;
  r.exited = true;
  r.exit_ms = EventLoop::NowMs();
  r.child_code = code;
  r.child_status = status;
  loop_.RemoveFd(r.pidfd.get());
  if (r.timeout_timer) {
    loop_.CancelTimer(r.timeout_timer);
    r.timeout_timer = 0;
  }
  memory_.Stop();            // the run has ended: no memory kill after its end
  r.egress_run_end.reset();  // the worker has its copy, or never will
  // Settle when the pipes are closed, or after a short drain: a detached grandchild
  // may hold them open for ever.
  r.drain_timer = loop_.AddTimer(kDrainMs, [this] {
    run_->drain_timer = 0;
    run_->drain_expired = true;
    MaybeSettle();
  });
  // The mirror's last reports come before its exit, bounded by its own deadlines; this
  // bounds a mirror that sends them no more.
  if (r.egress && r.egress->open())
    r.egress_timer = loop_.AddTimer(kEgressReportsMs, [this] {
      run_->egress_timer = 0;
      Settle();
    });
}

void RunSupervisor::OnTimeout() {
  if (!run_) return;
  run_->timeout_timer = 0;
  run_->timed_out = true;
  SignalGroup(SIGTERM);
  run_->kill_timer = loop_.AddTimer(kKillGraceMs, [this] {
    run_->kill_timer = 0;
    SignalGroup(SIGKILL);
  });
}

void RunSupervisor::SignalGroup(int sig) {
  if (!run_) return;
  Run& r = *run_;
  // The leader through its pidfd (never a recycled pid), then its process group: the
  // worker made itself a session and group leader, so the group id is its pid. Until
  // it is reaped the pid cannot be reused, so -pid cannot reach a stranger.
  // Settle reaps the leader and tears the run down before returning to the loop.
  PidfdSendSignal(r.pidfd.get(), sig);
  kill(-r.pid, sig);
}

void RunSupervisor::Cancel() {
  if (!run_) return;
  SignalGroup(SIGKILL);
}

void RunSupervisor::MaybeSettle() {
  if (!run_ || run_->settling || !run_->exited) return;
  const Run& r = *run_;
  // After the run's end nothing more comes on fd 4; its EOF waits for the worker's exit.
  const bool streams_done = r.out_eof && r.err_eof && (r.report_eof || r.end_reported);
  if (!streams_done && !r.drain_expired) return;
  // why: the receipt's byte counts are the mirror's reports, the last of them sent as it
  // exits; Settle's SIGKILL would cut them off (egress_timer bounds the wait).
  if (r.egress && r.egress->open()) return;
  Settle();
}

void RunSupervisor::Settle() {
  if (!run_ || run_->settling) return;
  Run& r = *run_;
  r.settling = true;  // the drain below must not settle a second time
  // A last bounded drain of what is already in the pipes.
  if (r.out_r.valid()) OnPipe(1, EPOLLIN);
  if (r.err_r.valid()) OnPipe(2, EPOLLIN);
  if (r.report_r.valid()) OnReport(EPOLLIN);
  // why: nothing of the run's process group outlives the run's result.
  SignalGroup(SIGKILL);
  siginfo_t info{};
  bool reaped = false;
  for (;;) {
    int rc = waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(r.pidfd.get()), &info,
                    WEXITED | WNOHANG);
    if (rc != 0 && errno == EINTR) continue;
    reaped = rc == 0 && info.si_pid != 0;
    break;
  }
  if (!r.exited) {  // the hard-deadline path: the worker had not exited yet
    r.exited = true;
    r.exit_ms = EventLoop::NowMs();
    if (reaped) {
      r.child_code = info.si_code;
      r.child_status = info.si_status;
    }  // else child_code stays 0: neither an exit code nor a signal is known
  }
  if (!reaped && !r.end_reported) {
    // why: never block the loop on a worker that has not died (stuck in the kernel, or
    // beyond our signals); the reaper's sweeps kill and reap it when it can die.
    LOG_WARN("worker %d did not die at the end of its run; it is reaped when it exits",
             static_cast<int>(r.pid));
  }
  // What the run left behind (orphans re-parented to us) is killed with it, before the
  // result is out and before the next run can start.
  reaper_.Sweep();
  // why: the answer does not wait for what is still dying (a worker that reported the
  // run's end is usually tearing its namespaces down; a killed leftover finishes its
  // exit), but the run's uid and the next started-ahead worker do, until nothing is left.
  const bool finishing = !reaped || reaper_.left() > 0;
  if (finishing) finishing_.Add(r.pid, std::move(r.pidfd), std::move(r.uid_lease), !reaped);
  // The scratch directory, then the uid. With nothing of the run left both go before the
  // answer: a client may start its next run on another broker the moment it reads it, and
  // must find the uid free (tests/integration/round_spend.test.mjs). Where something is
  // still dying the uid waits for it anyway, and the directory goes after the answer.
  ended_.emplace();
  ended_->scratch = std::move(r.scratch);
  if (!finishing) {
    ended_->uid_lease = std::move(r.uid_lease);
    ReleaseEnded();
  }

  RunResult result = Result(r);
  // What the run's mirror reported up to its end: its last byte counts and refusals.
  // Read whole: the group is killed above, so nothing more can come.
  if (r.egress) {
    r.egress->Drain();
    if (!result.failure) result.egress = r.egress->summary();
  }
  Done done = std::move(r.done);
  Teardown();
  if (done) done(std::move(result));  // after Teardown: it may start the next run
  ReleaseEnded();
  // The next run's worker, from the loop: the answer goes out first (with anything of the
  // run still dying, once it is reaped: FinishingWorkers).
  if (!finishing) Prestart();
}

void RunSupervisor::ReleaseEnded() {
  if (!ended_) return;
  RemoveScratch(ended_->scratch);
  ended_->uid_lease.reset();
  ended_.reset();
}

RunResult RunSupervisor::Result(Run& r) const {
  RunResult result = DecodeRunOutcome(r.report_buf, r.child_code, r.child_status, r.uid, config_,
                                      r.prepared.interpreter);
  result.run_uid = r.uid;
  if (result.failure) return result;
  result.out = std::move(r.out);
  result.err = std::move(r.err);
  result.timed_out = r.timed_out;
  result.memory_kill = r.memory_kill;
  result.duration_ms = r.exit_ms - r.start_ms;
  result.peak_memory_bytes = memory_.peak();
  return result;
}

void RunSupervisor::Teardown() {
  if (!run_) return;
  Run& r = *run_;
  for (UniqueFd* fd : {&r.out_r, &r.err_r, &r.report_r, &r.spec_w, &r.pidfd}) {
    if (fd->valid()) loop_.RemoveFd(fd->get());
  }
  for (EventLoop::TimerId t :
       {r.timeout_timer, r.kill_timer, r.drain_timer, r.hard_timer, r.egress_timer}) {
    if (t) loop_.CancelTimer(t);
  }
  memory_.Stop();
  WipeString(r.spec_bytes);
  r.egress.reset();  // its dials still open are forgotten: a socket that comes is closed
  run_.reset();
}

void RunSupervisor::KillAndReapNow() {
  if (refill_timer_) loop_.CancelTimer(refill_timer_);
  refill_timer_ = 0;
  ReleaseEnded();
  pool_.Discard();  // the waiting worker goes first: the sweep below spares none then
  std::unique_ptr<ScratchDir> scratch;
  std::optional<RunUidLease> lease;  // released last, once the run's processes are reaped
  // The same for earlier runs; their workers are our children: the sweep below reaps them.
  std::vector<std::optional<RunUidLease>> finishing_leases = finishing_.Drop();
  if (run_) {
    SignalGroup(SIGKILL);
    scratch = std::move(run_->scratch);  // removed once nothing of the run can write there
    lease = std::move(run_->uid_lease);
    Teardown();  // the leader is now one more child for the sweep below
  }
  if (!reaper_.SweepAndWait(kShutdownReapMs))
    LOG_WARN("%zu process(es) a run started did not die within %lld ms of SIGKILL", reaper_.left(),
             static_cast<long long>(kShutdownReapMs));
  RemoveScratch(scratch);
}

}  // namespace skillmcp
