#include "worker/cell.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "shared/unique_fd.h"
#include "worker/egress_relay.h"
#include "worker/report.h"

namespace skillmcp::worker {
namespace {

sigset_t MirrorSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);  // the child ended
  sigaddset(&set, SIGHUP);   // the mirror's parent-death signal
  sigaddset(&set, SIGTERM);  // the timeout: meant for node, which the group kill reaches
  return set;
}

// Exits as node did: its code, or death by its signal (default action, unblocked).
[[noreturn]] void ExitLike(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    raise(sig);
    _exit(128 + sig);  // a signal whose default is not to terminate (not from node)
  }
  _exit(static_cast<int>(WorkerStep::kFork));
}

// why: the broker is gone, nothing will time the run out or reap it: the run's whole
// process group dies now, this process included.
[[noreturn]] void KillRunGroup() {
  kill(0, SIGKILL);
  _exit(static_cast<int>(WorkerStep::kParentDeath));
}

}  // namespace

StepResult EnterPidIpcNamespace() {
  // why: the run sees and signals only its own processes, its System V IPC objects die
  // with it, and its init kills everything it left (docs/isolation.md).
  if (unshare(CLONE_NEWPID | CLONE_NEWIPC) != 0)
    return StepFailed(WorkerStep::kPidNamespace, errno);
  return StepOk();
}

StepResult MountFreshProc() {
  // why: the host's /proc would list every process of the host; this one lists the run's.
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return StepFailed(WorkerStep::kMountProc, errno);
  return StepOk();
}

StepResult DieWithParent(int sig, pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0)
    return StepFailed(WorkerStep::kParentDeath, errno);
  // why: a parent that died before the signal was armed never sends it.
  if (getppid() != parent) return StepFailed(WorkerStep::kParentDeath, ESRCH);
  return StepOk();
}

StepResult DieWithParentPidfd(int sig, int parent_pidfd) {
  if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0)
    return StepFailed(WorkerStep::kParentDeath, errno);
  struct pollfd p {
    parent_pidfd, POLLIN, 0
  };
  const int n = poll(&p, 1, 0);
  if (n < 0) return StepFailed(WorkerStep::kParentDeath, errno);
  if (n > 0) return StepFailed(WorkerStep::kParentDeath, ESRCH);  // readable: it exited
  return StepOk();
}

StepResult BlockMirrorSignals() {
  // why every signal, not only those it waits for: the mirror leads the run's process
  // group, so a script's kill(0, SIGUSR2) reaches it; blocked, that ends nothing (the
  // broker's SIGKILL still does), and the ones it waits for are read from the mask.
  sigset_t all;
  sigfillset(&all);
  if (sigprocmask(SIG_BLOCK, &all, nullptr) != 0) return StepFailed(WorkerStep::kFork, errno);
  return StepOk();
}

StepResult ResetSignalMask() {
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) return StepFailed(WorkerStep::kFork, errno);
  return StepOk();
}

void MirrorRun(pid_t child, int status_fd, pid_t broker, EgressRelay* relay) {
  const sigset_t set = MirrorSignals();
  // With a relay the signals are read from a descriptor, polled beside the relay's.
  UniqueFd signals;
  if (relay != nullptr) {
    signals.reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!signals.valid()) KillRunGroup();  // no way to see the run end: end it
  }
  std::vector<pollfd> fds;
  int status = 0;
  // With a relay most wakes are its traffic: the child and the parent are looked at only
  // after a signal came (SIGCHLD, SIGHUP, both blocked and queued for the descriptor), and
  // once before the first wait.
  bool signalled = true;
  for (;;) {
    if (signalled) {
      const pid_t got = waitpid(child, &status, WNOHANG);
      if (got == child) break;
      if (got < 0 && errno != EINTR) _exit(static_cast<int>(WorkerStep::kFork));
      // Checked on every signal, not trusted from it: the run may send SIGHUP too.
      if (getppid() != broker) KillRunGroup();
    }
    if (relay == nullptr) {
      siginfo_t info;
      sigwaitinfo(&set, &info);  // SIGTERM is consumed: node got its own from the group kill
      continue;
    }
    fds.clear();
    fds.push_back({signals.get(), POLLIN, 0});
    relay->Collect(fds);
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno != EINTR) KillRunGroup();
      signalled = true;
      continue;
    }
    signalled = fds[0].revents != 0;
    if (signalled) {
      signalfd_siginfo info[8];
      while (read(signals.get(), info, sizeof info) > 0) {
      }
    }
    relay->Handle(fds, 1);
  }
  // why before the exit: the broker finishes the receipt once the channel closes, which
  // this process's exit does; the counts of what is still open go first.
  if (relay != nullptr) relay->Finish();
  if (status_fd >= 0) {
    // init wrote node's status before exiting; nothing there means init itself failed
    // (its step code) or was killed: then its own status stands.
    int node_status = 0;
    if (read(status_fd, &node_status, sizeof node_status) == sizeof node_status)
      status = node_status;
  } else {
    // Without a namespace the child was node: the run's end goes to the broker now, before
    // this process's own exit (the broker kills and sweeps the group either way). A broker
    // that settled already closed the pipe: no SIGPIPE for that (ExitLike restores the
    // default of the signal it raises).
    signal(SIGPIPE, SIG_IGN);
    ReportRunEnd(status);
  }
  ExitLike(status);
}

void RunInit(pid_t node, int status_fd) {
  int node_status = 0;
  for (;;) {
    int status = 0;
    const pid_t got = waitpid(-1, &status, __WALL);
    if (got == node) {
      node_status = status;
      break;
    }
    if (got < 0 && errno != EINTR) _exit(static_cast<int>(WorkerStep::kFork));
  }
  (void)!write(status_fd, &node_status, sizeof node_status);
  // why: the broker answers on the run's end without waiting for the namespace's teardown,
  // so nothing of the run may be running when it is written. kill(-1) from pid 1 reaches
  // every other process of its namespace, and every one of them is init's descendant: once
  // init has no child left, none is (entering from outside takes setns, which the run's
  // filter refuses). Once is enough: a fork racing the kill either adds its child before
  // the kill walks the tasks, or finds SIGKILL pending in its parent and fails.
  kill(-1, SIGKILL);
  for (;;) {
    const pid_t got = waitpid(-1, nullptr, __WALL);
    if (got > 0 || errno == EINTR) continue;
    if (errno != ECHILD)
      _exit(static_cast<int>(WorkerStep::kFork));  // no end: the mirror's exit tells it
    break;
  }
  ReportRunEnd(node_status);
  _exit(0);
}

}  // namespace skillmcp::worker
