#include "broker/run/worker_pool.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace skillmcp {

WorkerPool::~WorkerPool() { Discard(); }

SpawnOutcome WorkerPool::Start() const {
  SpawnRequest req;
  req.worker_fd = config_.worker.get();
  req.node_fd = config_.node.get();
  req.spec_socket = true;  // 6 and 7 come with the description
  // why: as for every run: an unprivileged broker holding CAP_SETUID/CAP_SETGID passes
  // them on as ambient caps; the worker clears them itself.
  req.raise_ambient_setid = config_.switch_ids && geteuid() != 0;
  return SpawnWorker(req);
}

void WorkerPool::Discard() {
  if (!idle_) return;
  // why: nothing the broker started outlives it or lingers unused; ECHILD when the
  // runs' reaper got to it first.
  syscall(SYS_pidfd_send_signal, idle_->pidfd.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(idle_->pidfd.get()), &info,
                WEXITED) != 0 && errno == EINTR) {
  }
  idle_.reset();
}

SpawnOutcome WorkerPool::Take() {
  if (idle_) {
    siginfo_t info{};
    const int rc = waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(idle_->pidfd.get()),
                          &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == 0) {  // alive and waiting for its description
      SpawnOutcome o;
      o.spawned = std::move(idle_);
      idle_.reset();
      return o;
    }
    Discard();  // it died (or was reaped) while waiting: start another
  }
  return Start();
}

void WorkerPool::Refill() {
  if (idle_ || !config_.ready() || config_.namespaces_pending || config_.hidden_roots_pending ||
      config_.seccomp_pending)
    return;
  SpawnOutcome o = Start();
  if (o.spawned) idle_ = std::move(o.spawned);  // else the next run starts its own
}

ssize_t SendRunDescription(int spec_fd, const std::string& bytes, int script_fd,
                           int skill_dir_fd) {
  const int fds[2] = {script_fd, skill_dir_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  // why: MSG_NOSIGNAL: a worker that died first is EPIPE here, its exit tells the rest.
  return sendmsg(spec_fd, &msg, MSG_NOSIGNAL);
}

}  // namespace skillmcp
