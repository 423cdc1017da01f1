#include "broker/run/spawn.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "shared/borrowed_clone.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

constexpr int kChildFdFloor = 10;  // sources sit above the 0..7 layout while dup2 runs

// A descriptor for the child's use, moved above the 0..7 layout so that no dup2 of the
// sequence can overwrite a source still to be placed. Close-on-exec. -1 stays -1.
UniqueFd Lift(int fd) {
  if (fd < 0) return UniqueFd();
  return UniqueFd(fcntl(fd, F_DUPFD_CLOEXEC, kChildFdFloor));
}

// What the child needs, all prepared before the clone.
struct ChildPlan {
  int src[kWorkerFdCount];  // -1: that slot stays closed
  int worker_fd;
  int report_src;
  bool raise_ambient;
  char* const* envp;
};

// The child, in the broker's memory until its exec (CLONE_VM | CLONE_VFORK, the way
// glibc's posix_spawn starts a program): system calls only on what the parent prepared,
// nothing that allocates or writes the parent's data, then the exec. Never returns.
[[noreturn]] void RunChild(const ChildPlan& p) {
  int report_fd = p.report_src;
  int err = 0;
  for (int i = 0; i < kWorkerFdCount && err == 0; ++i) {
    if (p.src[i] < 0) {
      close(i);
    } else if (dup2(p.src[i], i) < 0) {  // dup2 clears close-on-exec on the target
      err = errno;
    } else if (i == kWorkerReportFd) {
      report_fd = kWorkerReportFd;
    }
  }
  if (err == 0) {
    // why: nothing of the broker's beyond 0..7 reaches the worker (it closes again too).
    syscall(SYS_close_range, static_cast<unsigned>(kWorkerFdCount), ~0u, CLOSE_RANGE_CLOEXEC);
    // why: a blocked or ignored signal survives exec; SIGTERM on timeout must work and
    // the script must see default dispositions (SIGPIPE is ignored in the broker).
    // Dispositions first, the mask second: the parent blocked every signal across the
    // clone, so no handler of the broker's can run on its memory in this child.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    if (p.raise_ambient) {
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETUID, 0, 0);
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETGID, 0, 0);
      // why: the worker empties its bounding set with it (fails quietly when not held).
      prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETPCAP, 0, 0);
    }
  }
  if (err == 0) {
    char arg0[] = "skill-mcp-worker";
    char* argv[] = {arg0, nullptr};
    char* no_env[] = {nullptr};  // why: the worker gets nothing from the broker's environment
    syscall(SYS_execveat, p.worker_fd, "", argv, p.envp ? p.envp : no_env, AT_EMPTY_PATH);
    err = errno;
  }
  // One convention for every launch: the report, then the step as exit code.
  char frame[kWorkerReportBytes];
  if (EncodeWorkerReport({WorkerStep::kSpawn, err}, frame))
    (void)!write(report_fd, frame, sizeof frame);
  _exit(static_cast<int>(WorkerStep::kSpawn));
}

int ChildEntry(void* plan) { RunChild(*static_cast<const ChildPlan*>(plan)); }

SpawnOutcome Fail(const char* call, int err) {
  SpawnOutcome o;
  o.error = {call, err};
  return o;
}

}  // namespace

SpawnOutcome SpawnWorker(const SpawnRequest& req) {
  int p[4][2];  // stdout, stderr, spec, report
  for (int i = 0; i < 4; ++i) {
    if (i == 2 && req.spec_socket) {
      // [0] the worker's end (fd 3), [1] ours, as with the pipe.
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p[i]) != 0)
        return Fail("socketpair", errno);
    } else if (pipe2(p[i], O_CLOEXEC) != 0) {
      return Fail("pipe2", errno);
    }
  }
  UniqueFd out_r(p[0][0]), out_w(p[0][1]), err_r(p[1][0]), err_w(p[1][1]);
  UniqueFd spec_r(p[2][0]), spec_w(p[2][1]), report_r(p[3][0]), report_w(p[3][1]);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return Fail("open /dev/null", errno);
  // Sources for 0..7 in order, lifted above the layout; then the worker binary.
  const int wanted[kWorkerFdCount] = {devnull.get(),     out_w.get(),   err_w.get(),
                                      spec_r.get(),      report_w.get(), req.node_fd,
                                      req.script_fd,     req.skill_dir_fd};
  UniqueFd lifted[kWorkerFdCount];
  ChildPlan plan{};
  for (int i = 0; i < kWorkerFdCount; ++i) {
    lifted[i] = Lift(wanted[i]);
    if (wanted[i] >= 0 && !lifted[i].valid()) return Fail("fcntl", errno);
    plan.src[i] = lifted[i].get();
  }
  UniqueFd worker = Lift(req.worker_fd);
  if (!worker.valid()) return Fail("fcntl", req.worker_fd < 0 ? EBADF : errno);
  plan.worker_fd = worker.get();
  plan.report_src = lifted[kWorkerReportFd].get();
  plan.raise_ambient = req.raise_ambient_setid;
  plan.envp = req.worker_envp;

  // Not fork: a copy of the broker's address space is dear (its page tables, then a
  // copy-on-write fault on each page the broker writes next: about 40 faults and 0.6 ms
  // on the request after each run, tests/bench/README.md, "the broker's spawn without a
  // copy of the broker"). The child borrows the broker's memory on a stack of its own
  // and the broker sleeps until the exec, as posix_spawn does. Only a process that may signal
  // the broker's uid could stop the child there, and it could stop the broker itself as
  // well: a run's processes cannot (Landlock's signal scope, and none outlives its run).
  sigset_t all, old_mask;
  sigfillset(&all);
  // why: no signal handler of the broker's may run in the child, on the broker's memory,
  // before the child has reset the dispositions (RunChild). (glibc leaves out its two
  // internal signals, which it sends to its own threads only, never to this child.)
  pthread_sigmask(SIG_BLOCK, &all, &old_mask);
  const char* failed_call = "clone";
  const pid_t pid = CloneBorrowingMemory(ChildEntry, &plan, &failed_call);
  const int clone_err = errno;
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (pid < 0) return Fail(failed_call, clone_err);

  Spawned s;
  s.pid = pid;
  s.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!s.pidfd.valid()) {
    const int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return Fail("pidfd_open", e);
  }
  // The child's copies close when this returns (lifted[], out_w, ...): EOF on a pipe
  // then means the worker's side.
  s.out = std::move(out_r);
  s.err = std::move(err_r);
  s.spec = std::move(spec_w);
  s.report = std::move(report_r);
  SpawnOutcome o;
  o.spawned = std::move(s);
  return o;
}

}  // namespace skillmcp
