#include "broker/run/supervisor.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sodium.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "shared/log.h"
#include "shared/open_beneath.h"
#include "shared/run_spec.h"
#include "shared/worker_steps.h"

namespace skillmcp {
namespace {

// A step value of our own for failures in the forked child before the worker runs
// (dup2, exec of the worker binary). Outside the WorkerStep range.
constexpr int32_t kLaunchStep = 0;
constexpr int kChildFdFloor = 10;  // sources sit above the 0..7 layout while dup2 runs
constexpr size_t kReadChunk = 65536;
constexpr int kMaxReadsPerEvent = 16;  // one busy stream cannot starve the others

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

bool SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

// A descriptor for the child's use, moved above the 0..7 layout so that no dup2 of
// the sequence can overwrite a source still to be placed. Close-on-exec.
UniqueFd Lift(int fd) { return UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, kChildFdFloor)); }

void Wipe(std::string& s) {
  if (!s.empty()) sodium_memzero(s.data(), s.size());
  s.clear();
}

std::string OpenFailure(const std::string& script, int err) {
  std::string why;
  switch (err) {
    case EXDEV:
    case ELOOP:
      why =
          "it resolves outside the skill directory (a symlink or a swapped path); only files "
          "inside the skill's own directory run";
      break;
    case ENOENT:
      why = "it does not exist in the skill directory any more";
      break;
    case EINVAL:
      why = "it is not a regular file";
      break;
    default:
      why = std::strerror(err);
  }
  return "the script " + script + " was refused by the resolved path check: " + why;
}

std::string DescribeFailure(const WorkerFailure& f, const LaunchConfig& c) {
  std::string err = std::strerror(f.err);
  if (f.step == kLaunchStep)
    return "the script did not start: the broker could not start the worker " + c.worker_path +
           ": " + err;
  std::optional<WorkerStep> step = WorkerStepFromExitCode(f.step);
  if (!step)
    return "the script did not start: the worker failed at an unknown setup step " +
           std::to_string(f.step) + ": " + err;
  std::string what = DescribeWorkerStep(*step);
  std::string hint;
  switch (*step) {
    case WorkerStep::kRefuseRootIds:
    case WorkerStep::kSetGroups:
    case WorkerStep::kSetGid:
    case WorkerStep::kSetUid:
    case WorkerStep::kVerifyIds:
      what += " (run-as uid " + std::to_string(c.uid) + ", gid " + std::to_string(c.gid) + ")";
      hint = "; the broker needs root or CAP_SETUID/CAP_SETGID for this (see skill-mcp doctor)";
      break;
    case WorkerStep::kChdir:
      hint = "; the run-as user needs search permission on the skill directory and its parents";
      break;
    case WorkerStep::kExec:
      hint = "; check the pinned node (" + c.node_path + ")";
      break;
    default:
      break;
  }
  return "the script did not start: the worker could not " + what + ": " + err + hint;
}

}  // namespace

struct RunSupervisor::Run {
  RunRequest req;
  Done done;
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd out_r, err_r, status_r, spec_w;
  std::string spec_bytes;
  size_t spec_off = 0;
  StreamCapture out, err;
  std::string status_buf;
  bool out_eof = false, err_eof = false, status_eof = false;
  bool exited = false;
  int child_code = 0, child_status = 0;  // from waitid: CLD_* and the code or signal
  bool timed_out = false;
  bool settling = false;  // Settle is on the stack: its drain must not re-enter it
  int64_t start_ms = 0, exit_ms = 0;
  EventLoop::TimerId timeout_timer = 0, kill_timer = 0, drain_timer = 0, hard_timer = 0;
};

RunSupervisor::RunSupervisor(EventLoop& loop, const LaunchConfig& config, const EnvStore& env)
    : loop_(loop),
      config_(config),
      env_(env),
      reaper_(loop, [this] { return run_ && !run_->settling ? run_->pid : -1; }) {
  // why: orphans of a run re-parent to us instead of init, so none outlives its run.
  if (!BecomeSubreaper())
    LOG_WARN_ERRNO("cannot become the runs' child subreaper; a run's orphans outlive it");
}

RunSupervisor::~RunSupervisor() { KillAndReapNow(); }

pid_t RunSupervisor::pid() const { return run_ ? run_->pid : -1; }

std::string RunSupervisor::Start(RunRequest request, Done on_done) {
  // why: one run at a time bounds what a client can make the host do.
  if (Busy()) return "a script is already running; wait for its result, then call skill_run again";
  if (!config_.ready()) return "scripts cannot run on this server: " + config_.refusal;

  // The resolved half of the containment check, on the descriptor that will run:
  // RESOLVE_BENEATH refuses a script swapped for a link leading out after the scan.
  UniqueFd script = OpenRegularBeneath(request.skill_dir_fd, request.script);
  if (!script.valid()) return OpenFailure(request.script, errno);

  RunSpec spec;
  spec.program = RunProgram::kNodeScript;
  spec.script_path = request.script_real_path;
  spec.args = request.args;
  for (const std::string& name : request.env_names) {
    // why: an unset (or blank/placeholder) name is absent from the block, never empty.
    env_.WithValue(name,
                   [&](std::string_view v) { spec.envp.push_back(name + "=" + std::string(v)); });
  }
  spec.switch_ids = config_.switch_ids;
  spec.uid = config_.uid;
  spec.gid = config_.gid;
  spec.limits = config_.limits;
  spec.seccomp = config_.seccomp;
  spec.seccomp_bpf = config_.seccomp_bpf;
  if (config_.namespaces) {
    spec.namespaces = true;
    spec.skill_dir_path = request.skill_dir_path;
    spec.hidden_roots = config_.hidden_roots;
  }
  bool valid = IsValidRunSpec(spec);
  std::string encoded = valid ? EncodeRunSpec(spec) : std::string();
  for (std::string& e : spec.envp) Wipe(e);  // why: values leave plain memory at once
  if (!valid || encoded.size() > kRunSpecMaxBytes) {
    Wipe(encoded);
    return "the run description is not acceptable (an argument or variable holds a NUL byte, or "
           "everything together is over 1 MiB); shorten the arguments";
  }

  // Everything the child needs exists before fork: after it, only async-signal-safe calls.
  int out_p[2], err_p[2], spec_p[2], status_p[2];
  bool piped = pipe2(out_p, O_CLOEXEC) == 0;
  piped = piped && pipe2(err_p, O_CLOEXEC) == 0;
  piped = piped && pipe2(spec_p, O_CLOEXEC) == 0;
  piped = piped && pipe2(status_p, O_CLOEXEC) == 0;
  if (!piped) {
    Wipe(encoded);
    return std::string("could not create the run's pipes: ") + std::strerror(errno);
  }
  UniqueFd out_r(out_p[0]), out_w(out_p[1]), err_r(err_p[0]), err_w(err_p[1]);
  UniqueFd spec_r(spec_p[0]), spec_w(spec_p[1]), status_r(status_p[0]), status_w(status_p[1]);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));

  // Sources for 0..7 in order, lifted above the layout; then the worker binary.
  UniqueFd src[8] = {Lift(devnull.get()), Lift(out_w.get()),         Lift(err_w.get()),
                     Lift(spec_r.get()),  Lift(status_w.get()),      Lift(config_.node.get()),
                     Lift(script.get()),  Lift(request.skill_dir_fd)};
  UniqueFd worker = Lift(config_.worker.get());
  for (const UniqueFd& fd : src) {
    if (!fd.valid()) {
      Wipe(encoded);
      return std::string("could not prepare the worker's descriptors: ") + std::strerror(errno);
    }
  }
  if (!worker.valid()) {
    Wipe(encoded);
    return std::string("could not prepare the worker's descriptors: ") + std::strerror(errno);
  }
  int src_fd[8];
  for (int i = 0; i < 8; ++i) src_fd[i] = src[i].get();
  const int worker_fd = worker.get();
  const int status_src = src[4].get();
  char arg0[] = "skill-mcp-worker";
  char* argv[] = {arg0, nullptr};
  char* envp[] = {nullptr};  // why: the worker gets nothing from the broker's environment
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  // why: an unprivileged broker holding CAP_SETUID/CAP_SETGID passes them to the worker
  // as ambient caps (the worker binary has no file caps); the worker clears them itself.
  const bool raise_ambient = spec.switch_ids && geteuid() != 0;

  pid_t pid = fork();
  if (pid < 0) {
    Wipe(encoded);
    return std::string("could not fork the worker: ") + std::strerror(errno);
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    WorkerFailure fail{kLaunchStep, 0};
    for (int i = 0; i < 8; ++i) {
      if (dup2(src_fd[i], i) < 0) {  // dup2 clears close-on-exec on the target
        fail.err = errno;
        (void)!write(status_src, &fail, sizeof fail);
        _exit(127);
      }
    }
    // why: nothing of the broker's beyond 0..7 reaches the worker (it closes again too).
    syscall(SYS_close_range, 8u, ~0u, CLOSE_RANGE_CLOEXEC);
    // why: a blocked or ignored signal survives exec; SIGTERM on timeout must work and
    // the script must see default dispositions (SIGPIPE is ignored in the broker).
    sigprocmask(SIG_SETMASK, &empty_mask, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
    }
    if (raise_ambient) {
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETUID, 0, 0);
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETGID, 0, 0);
    }
    syscall(SYS_execveat, worker_fd, "", argv, envp, AT_EMPTY_PATH);
    fail.err = errno;
    (void)!write(status_src, &fail, sizeof fail);
    _exit(127);
  }

  auto run = std::make_unique<Run>();
  run->start_ms = EventLoop::NowMs();
  run->pid = pid;
  run->pidfd.reset(PidfdOpen(pid));
  if (!run->pidfd.valid()) {
    int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    Wipe(encoded);
    return std::string("could not supervise the worker (pidfd_open): ") + std::strerror(e);
  }
  // The child's copies close here (src[], out_w, ...): EOF then means the worker side.
  run->out_r = std::move(out_r);
  run->err_r = std::move(err_r);
  run->status_r = std::move(status_r);
  run->spec_w = std::move(spec_w);
  run->spec_bytes = std::move(encoded);
  run->req = std::move(request);
  run->done = std::move(on_done);
  SetNonBlocking(run->out_r.get());
  SetNonBlocking(run->err_r.get());
  SetNonBlocking(run->status_r.get());
  SetNonBlocking(run->spec_w.get());
  run_ = std::move(run);

  loop_.AddFd(run_->out_r.get(), EPOLLIN, [this](uint32_t ev) { OnPipe(1, ev); });
  loop_.AddFd(run_->err_r.get(), EPOLLIN, [this](uint32_t ev) { OnPipe(2, ev); });
  loop_.AddFd(run_->status_r.get(), EPOLLIN, [this](uint32_t ev) { OnStatus(ev); });
  loop_.AddFd(run_->pidfd.get(), EPOLLIN, [this](uint32_t) { OnExit(); });
  loop_.AddFd(run_->spec_w.get(), EPOLLOUT, [this](uint32_t) { OnSpecWritable(); });
  int64_t timeout = run_->req.timeout_ms;
  run_->timeout_timer = loop_.AddTimer(timeout, [this] { OnTimeout(); });
  // why: the call always returns, whatever the script's descendants do.
  run_->hard_timer = loop_.AddTimer(timeout + kHardDeadlineExtraMs, [this] {
    run_->hard_timer = 0;
    Settle();
  });
  OnSpecWritable();
  return "";
}

void RunSupervisor::OnSpecWritable() {
  if (!run_ || !run_->spec_w.valid()) return;
  Run& r = *run_;
  while (r.spec_off < r.spec_bytes.size()) {
    ssize_t n =
        write(r.spec_w.get(), r.spec_bytes.data() + r.spec_off, r.spec_bytes.size() - r.spec_off);
    if (n > 0) {
      r.spec_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;  // the loop calls again when there is room
    break;                                 // EPIPE: the worker is gone; its exit tells the rest
  }
  loop_.RemoveFd(r.spec_w.get());
  r.spec_w.reset();  // EOF ends the worker's read
  Wipe(r.spec_bytes);
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

void RunSupervisor::OnStatus(uint32_t) {
  if (!run_ || !run_->status_r.valid()) return;
  Run& r = *run_;
  char buf[64];
  for (;;) {
    ssize_t n = read(r.status_r.get(), buf, sizeof buf);
    if (n > 0) {
      // why: bounded; a worker writes one WorkerFailure, anything more is ignored.
      if (r.status_buf.size() < sizeof(WorkerFailure))
        r.status_buf.append(
            buf, std::min(static_cast<size_t>(n), sizeof(WorkerFailure) - r.status_buf.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    break;
  }
  loop_.RemoveFd(r.status_r.get());
  r.status_r.reset();
  r.status_eof = true;
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
  r.exited = true;
  r.exit_ms = EventLoop::NowMs();
  r.child_code = info.si_code;
  r.child_status = info.si_status;
  loop_.RemoveFd(r.pidfd.get());
  if (r.timeout_timer) {
    loop_.CancelTimer(r.timeout_timer);
    r.timeout_timer = 0;
  }
  // Settle when the pipes are closed, or after a short drain: a detached grandchild
  // may hold them open for ever.
  r.drain_timer = loop_.AddTimer(kDrainMs, [this] {
    run_->drain_timer = 0;
    Settle();
  });
  MaybeSettle();
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
  if (run_ && !run_->settling && run_->exited && run_->out_eof && run_->err_eof && run_->status_eof)
    Settle();
}

void RunSupervisor::Settle() {
  if (!run_ || run_->settling) return;
  Run& r = *run_;
  r.settling = true;  // the drain below must not settle a second time
  // A last bounded drain of what is already in the pipes.
  if (r.out_r.valid()) OnPipe(1, EPOLLIN);
  if (r.err_r.valid()) OnPipe(2, EPOLLIN);
  if (r.status_r.valid()) OnStatus(EPOLLIN);
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
  if (!reaped) {
    // why: never block the loop on a worker that has not died (stuck in the kernel, or
    // beyond our signals); the reaper's sweeps kill and reap it when it can die.
    LOG_WARN("worker %d did not die at the end of its run; it is reaped when it exits",
             static_cast<int>(r.pid));
  }
  // What the run left behind (orphans re-parented to us) dies with it, before the
  // result is out and before the next run can start.
  reaper_.Sweep();

  RunOutcome outcome;
  if (r.status_buf.size() == sizeof(WorkerFailure)) {
    WorkerFailure f{};
    std::memcpy(&f, r.status_buf.data(), sizeof f);
    outcome.ran = false;
    outcome.failed_step = f.step;
    outcome.error = DescribeFailure(f, config_);
  } else {
    RunObservation obs;
    obs.skill = r.req.skill;
    obs.script = r.req.script;
    if (r.child_code == CLD_EXITED) {
      obs.exit_code = r.child_status;
    } else if (r.child_code == CLD_KILLED || r.child_code == CLD_DUMPED) {
      obs.signal = r.child_status;
    }
    obs.out = std::move(r.out);
    obs.err = std::move(r.err);
    obs.timed_out = r.timed_out;
    obs.timeout_ms = r.req.timeout_ms;
    obs.duration_ms = r.exit_ms - r.start_ms;
    obs.env = r.req.env_names;
    obs.network_note = r.req.network_note;
    outcome.ran = true;
    outcome.receipt = BuildReceipt(obs);
  }
  Done done = std::move(r.done);
  Teardown();
  if (done) done(std::move(outcome));  // after Teardown: it may start the next run
}

void RunSupervisor::Teardown() {
  if (!run_) return;
  Run& r = *run_;
  for (UniqueFd* fd : {&r.out_r, &r.err_r, &r.status_r, &r.spec_w, &r.pidfd}) {
    if (fd->valid()) loop_.RemoveFd(fd->get());
  }
  for (EventLoop::TimerId t : {r.timeout_timer, r.kill_timer, r.drain_timer, r.hard_timer}) {
    if (t) loop_.CancelTimer(t);
  }
  Wipe(r.spec_bytes);
  run_.reset();
}

void RunSupervisor::KillAndReapNow() {
  if (run_) {
    SignalGroup(SIGKILL);
    Teardown();  // the leader is now one more child for the sweep below
  }
  if (!reaper_.SweepAndWait(kShutdownReapMs))
    LOG_WARN("%zu process(es) a run started did not die within %lld ms of SIGKILL",
             reaper_.left(), static_cast<long long>(kShutdownReapMs));
}

}  // namespace skillmcp
