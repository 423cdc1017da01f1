// Whether runs can get their own user, mount, pid and IPC namespace here (auto or on):
// tried once at boot, the way a run would, by the real worker in its probe mode.
// `doctor` probes synchronously; `serve` probes on its event loop after start, so the
// probe does not delay the first answer (docs/architecture.md, "Start").
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "broker/loop/event_loop.h"
#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"

namespace skillmcp {

struct LaunchConfig;

struct NamespaceProbe {
  int err = 0;                     // 0: everything the probe was asked for worked
  std::optional<WorkerStep> step;  // the worker's failing step, when it reported one
};

// A probe that said nothing about the host: killed or stopped (a process of the run-as
// uid can signal it), timed out, or ended without a report it could read. Such a probe
// decides nothing: serve tries once more, and DecideNamespaces then refuses runs rather
// than take it as "this host has no namespaces" (which would turn auto off).
bool ProbeUndecided(const NamespaceProbe& probe);

// How long the loop's probe may take before it is killed (ETIMEDOUT): a probe takes
// milliseconds; this bounds a stopped one.
inline constexpr int64_t kProbeDeadlineMs = 10000;

// Spawns the worker (broker/run/spawn.h) with a probe RunSpec: it takes the run-as
// identity (when the config switches ids) and does the run-independent namespace steps:
// unshare(CLONE_NEWUSER | CLONE_NEWNS), the uid/gid maps, / private and a tmpfs on
// /tmp, unshare(CLONE_NEWPID | CLONE_NEWIPC) and the fork of the namespace's init, which
// mounts a fresh /proc when `fresh_proc`. err is 0 when all worked, else the errno that
// stopped it (EPERM under RestrictNamespaces= or a container profile, or from mount under
// a system call filter without @mount, or from the /proc mount where the runtime masks
// parts of /proc; ENOSPC when user.max_user_namespaces is 0, ...).
NamespaceProbe ProbeRunNamespaces(const LaunchConfig& config, bool fresh_proc);

// The same probe on an event loop: the worker's report pipe and its pidfd are watched,
// nothing blocks. `done` is called exactly once, from the loop (also when the spawn
// fails), unless the task is destroyed first: then the worker is killed and reaped.
class NamespaceProbeTask {
 public:
  using Done = std::function<void(NamespaceProbe)>;
  explicit NamespaceProbeTask(EventLoop& loop, int64_t deadline_ms = kProbeDeadlineMs)
      : loop_(loop), deadline_ms_(deadline_ms) {}
  ~NamespaceProbeTask();
  NamespaceProbeTask(const NamespaceProbeTask&) = delete;
  NamespaceProbeTask& operator=(const NamespaceProbeTask&) = delete;

  // `config` is read only here. One probe at a time.
  void Start(const LaunchConfig& config, bool fresh_proc, Done done);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // the probing worker, while running (tests)

 private:
  void OnReport();
  void OnExit();
  void MaybeFinish();
  void Finish(NamespaceProbe result);

  EventLoop& loop_;
  Done done_;
  pid_t pid_ = -1;
  UniqueFd pidfd_, report_;
  std::string report_bytes_;
  bool report_eof_ = false, exited_ = false, exit_zero_ = false;
  EventLoop::TimerId defer_ = 0;
  int64_t deadline_ms_;
  EventLoop::TimerId deadline_ = 0;
  bool timed_out_ = false;
};

}  // namespace skillmcp
