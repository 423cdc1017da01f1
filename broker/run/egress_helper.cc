#include "broker/run/egress_helper.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/run/interpreters.h"
#include "shared/log.h"

namespace skillmcp {
namespace {

// Well above anything the child places, so the placing below cannot overwrite them.
constexpr int kLiftTo = 100;
constexpr int kHelperConnectionFd = 3;

// The child, between fork and exec: system calls only. Never returns.
[[noreturn]] void RunChild(int exe_fd, int conn_fd, int devnull, bool drop, uid_t uid, gid_t gid) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the broker's blocked signals are not its
  // why: the helper needs no privilege; a root broker's would be a root process with
  // the network.
  if (drop && (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
               setresuid(uid, uid, uid) != 0))
    _exit(126);
  // why: the helper dies with the broker that started it, even one killed outright (set
  // after the uid change, which clears it).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // why: fd 1 is the broker's MCP channel, which the helper must never write to.
  if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(conn_fd, kHelperConnectionFd) < 0)
    _exit(126);
  char arg0[] = "skill-mcp-egress";
  char arg1[] = "--connection-fd";
  char arg2[] = "3";
  char* argv[] = {arg0, arg1, arg2, nullptr};
  char* envp[] = {nullptr};
  syscall(SYS_execveat, exe_fd, "", argv, envp, AT_EMPTY_PATH);
  _exit(127);
}

}  // namespace

std::unique_ptr<EgressHelperProcess> EgressHelperProcess::Start(EventLoop& loop,
                                                                const LaunchConfig& c,
                                                                std::string* error) {
  UniqueFd exe;
  if (std::string e = OpenExecutable(c.egress.helper_path, &exe); !e.empty()) {
    *error = "the egress helper " + c.egress.helper_path + " cannot be used (" + e +
             "); install skill-mcp-egress or set SKILL_MCP_EGRESS_HELPER";
    return nullptr;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    *error = std::string("cannot make the egress helper's socket pair: ") + std::strerror(errno);
    return nullptr;
  }
  UniqueFd ours(pair[0]), theirs(pair[1]);
  UniqueFd devnull(open("/dev/null", O_RDWR | O_CLOEXEC));
  UniqueFd exe_hi(fcntl(exe.get(), F_DUPFD_CLOEXEC, kLiftTo));
  UniqueFd theirs_hi(fcntl(theirs.get(), F_DUPFD_CLOEXEC, kLiftTo));
  UniqueFd devnull_hi(devnull.valid() ? fcntl(devnull.get(), F_DUPFD_CLOEXEC, kLiftTo) : -1);
  if (!exe_hi.valid() || !theirs_hi.valid() || !devnull_hi.valid()) {
    *error = std::string("cannot prepare the egress helper's descriptors: ") + std::strerror(errno);
    return nullptr;
  }
  const bool drop = geteuid() == 0 && c.switch_ids;
  // A plain fork: once, at boot, while the broker is small and has no thread.
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot start the egress helper: ") + std::strerror(errno);
    return nullptr;
  }
  if (pid == 0) RunChild(exe_hi.get(), theirs_hi.get(), devnull_hi.get(), drop, c.uid, c.gid);
  std::unique_ptr<EgressHelperProcess> p(new EgressHelperProcess(loop));
  p->pid_ = pid;
  p->pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  p->connection_ = std::move(ours);
  if (!p->pidfd_.valid() ||
      !loop.AddFd(p->pidfd_.get(), EPOLLIN, [raw = p.get()](uint32_t) { raw->OnExit(); })) {
    *error = std::string("cannot watch the egress helper: ") + std::strerror(errno);
    return nullptr;  // the destructor kills and reaps it
  }
  return p;
}

void EgressHelperProcess::OnExit() {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG) != 0 || info.si_pid == 0)
    return;
  LOG_WARN("the egress helper exited (%s %d); declared runs reach no host from now on",
           info.si_code == CLD_EXITED ? "status" : "signal", info.si_status);
  loop_.RemoveFd(pidfd_.get());
  pidfd_.reset();
  pid_ = -1;
}

EgressHelperProcess::~EgressHelperProcess() {
  if (pid_ <= 0) return;
  if (pidfd_.valid()) loop_.RemoveFd(pidfd_.get());
  kill(pid_, SIGKILL);
  int rc;
  do {
    rc = waitpid(pid_, nullptr, 0);
  } while (rc < 0 && errno == EINTR);
}

}  // namespace skillmcp
