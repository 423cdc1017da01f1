#include "broker/run/namespace_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "broker/run/launch_config.h"
#include "broker/run/spawn.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

bool WriteAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads fd to EOF, keeping at most one report frame and a byte more (so a longer
// answer is seen as malformed).
std::string ReadReport(int fd) {
  std::string got;
  char buf[64];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (got.size() <= kWorkerReportBytes) got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// The worker started in probe mode with its run description written (the spec is a few
// dozen bytes, far below a pipe's buffer, so the write cannot block); or why not.
struct Launched {
  std::optional<Spawned> spawned;
  NamespaceProbe failed;
};

Launched LaunchProbe(const LaunchConfig& config, bool fresh_proc) {
  RunSpec spec;
  spec.probe = true;
  spec.fresh_proc = fresh_proc;
  spec.seccomp = false;
  spec.switch_ids = config.switch_ids;
  spec.uid = config.uid;
  spec.gid = config.gid;
  // The declared network mode is tried too, last: a host (or a unit) that refuses a run
  // its own network settles that mode on off, and leaves the namespaces on.
  spec.egress_declared = config.network_mode == NetworkMode::kDeclared;
  std::optional<std::string> encoded = EncodeRunSpec(spec);
  if (!encoded) return {std::nullopt, {EINVAL}};
  SpawnRequest req;
  req.worker_fd = config.worker.get();
  req.raise_ambient_setid = config.switch_ids && geteuid() != 0;
  SpawnOutcome spawned = SpawnWorker(req);
  if (!spawned.spawned) return {std::nullopt, {spawned.error.err}};
  // EPIPE (the worker died first) shows in its report; SIGPIPE is ignored in the broker.
  WriteAll(spawned.spawned->spec.get(), *encoded);
  spawned.spawned->spec.reset();
  return {std::move(spawned.spawned), {}};
}

// The verdict from the report bytes and how the worker ended.
NamespaceProbe Interpret(const std::string& report, bool exited_zero) {
  if (std::optional<WorkerReport> r = DecodeWorkerReport(report))
    return {r->err ? r->err : EPROTO, r->step};
  if (!report.empty()) return {EPROTO};  // why: an answer we cannot read is a failure
  if (!exited_zero) return {ECHILD};
  return {};
}

}  // namespace

NamespaceProbe ProbeRunNamespaces(const LaunchConfig& config, bool fresh_proc) {
  Launched l = LaunchProbe(config, fresh_proc);
  if (!l.spawned) return l.failed;
  Spawned& s = *l.spawned;
  const std::string report = ReadReport(s.report.get());
  int status = 0;
  while (waitpid(s.pid, &status, 0) < 0) {
    if (errno != EINTR) return {errno};
  }
  return Interpret(report, WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

bool ProbeUndecided(const NamespaceProbe& probe) {
  return !probe.step && (probe.err == ECHILD || probe.err == ETIMEDOUT || probe.err == EPROTO);
}

NamespaceProbeTask::~NamespaceProbeTask() {
  if (defer_) loop_.CancelTimer(defer_);
  if (deadline_) loop_.CancelTimer(deadline_);
  if (pid_ <= 0) return;
  // why: no probe worker outlives the broker's session; it is killed and reaped here
  // (ECHILD when the runs' reaper got to it first).
  syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  if (report_.valid()) loop_.RemoveFd(report_.get());
  if (!exited_) {
    loop_.RemoveFd(pidfd_.get());
    siginfo_t info{};
    while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0 && errno == EINTR) {
    }
  }
}

void NamespaceProbeTask::Start(const LaunchConfig& config, bool fresh_proc, Done done) {
  done_ = std::move(done);
  report_bytes_.clear();
  report_eof_ = exited_ = timed_out_ = false;
  Launched l = LaunchProbe(config, fresh_proc);
  if (!l.spawned) {
    // Always from the loop, never from inside Start.
    defer_ = loop_.AddTimer(0, [this, failed = l.failed] {
      defer_ = 0;
      Finish(failed);
    });
    return;
  }
  pid_ = l.spawned->pid;
  pidfd_ = std::move(l.spawned->pidfd);
  report_ = std::move(l.spawned->report);
  // why: a stopped probe would hold skill_run (and the input behind it) for ever; at the
  // deadline it is killed and its exit is taken as ETIMEDOUT, which decides nothing.
  deadline_ = loop_.AddTimer(deadline_ms_, [this] {
    deadline_ = 0;
    timed_out_ = true;
    syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  });
  const int fl = fcntl(report_.get(), F_GETFL);
  if (fl < 0 || fcntl(report_.get(), F_SETFL, fl | O_NONBLOCK) != 0 ||
      !loop_.AddFd(report_.get(), EPOLLIN, [this](uint32_t) { OnReport(); }) ||
      !loop_.AddFd(pidfd_.get(), EPOLLIN, [this](uint32_t) { OnExit(); })) {
    // why: a probe the loop cannot watch decides nothing; it fails (runs stay off or
    // refused, as for any failed probe).
    const int e = errno ? errno : EIO;
    if (report_.valid()) loop_.RemoveFd(report_.get());
    loop_.RemoveFd(pidfd_.get());
    report_.reset();
    syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    siginfo_t info{};
    while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0 && errno == EINTR) {
    }
    exited_ = true;
    defer_ = loop_.AddTimer(0, [this, e] {
      defer_ = 0;
      Finish({e});
    });
  }
}

// Reads to EOF, keeping at most one report frame and a byte more (so a longer answer is
// seen as malformed).
void NamespaceProbeTask::OnReport() {
  char buf[64];
  for (;;) {
    ssize_t n = read(report_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) break;
    if (report_bytes_.size() <= kWorkerReportBytes)
      report_bytes_.append(buf, static_cast<size_t>(n));
  }
  loop_.RemoveFd(report_.get());
  report_.reset();
  report_eof_ = true;
  MaybeFinish();
}

void NamespaceProbeTask::OnExit() {
  siginfo_t info{};
  if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
             WEXITED | WNOHANG) != 0) {
    if (errno == EINTR) return;
    info.si_code = 0;  // reaped elsewhere: how it ended is unknown, which is a failure
  } else if (info.si_pid == 0) {
    return;  // not yet
  }
  exited_ = true;
  exit_zero_ = info.si_code == CLD_EXITED && info.si_status == 0;
  loop_.RemoveFd(pidfd_.get());
  MaybeFinish();
}

void NamespaceProbeTask::MaybeFinish() {
  // The report is read to its end and the worker is reaped, as the synchronous probe does.
  if (!exited_ || (report_.valid() && !report_eof_)) return;
  NamespaceProbe result = timed_out_ ? NamespaceProbe{ETIMEDOUT} : Interpret(report_bytes_, exit_zero_);
  Finish(result);
}

void NamespaceProbeTask::Finish(NamespaceProbe result) {
  if (deadline_) loop_.CancelTimer(deadline_);
  deadline_ = 0;
  pid_ = -1;
  pidfd_.reset();
  report_.reset();
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(result);  // last: it may start the next probe
}


}  // namespace skillmcp
