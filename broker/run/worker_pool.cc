#include "broker/run/worker_pool.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shared/log.h"
#include "shared/worker_protocol.h"

namespace skillmcp {

namespace {

// why: nothing the broker started outlives it or lingers unused; ECHILD when the runs'
// reaper got to it first.
void KillAndReap(const Spawned& worker) {
  syscall(SYS_pidfd_send_signal, worker.pidfd.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(worker.pidfd.get()), &info,
                WEXITED) != 0 &&
         errno == EINTR) {
  }
}

}  // namespace

WorkerPool::~WorkerPool() { Discard(); }

TakeOutcome WorkerPool::Start(const PinnedInterpreter& interpreter) const {
  TakeOutcome out;
  CellSpec cell;
  cell.switch_ids = config_.switch_ids;
  std::optional<RunUidLease> lease;
  if (config_.run_uids) {
    // why only from a large range: a waiting worker holds its uid, which a small range
    // keeps for running scripts (kUidsAheadMinRange); never a silent fallback to the
    // shared run-as uid when the range is exhausted.
    if (config_.run_uids->range().size() >= kUidsAheadMinRange) {
      RunUidPool::Acquired got = config_.run_uids->Acquire();
      if (!got.lease) {
        out.no_uid = got.error;
        return out;
      }
      lease = std::move(got.lease);
      // why only a uid of its own: no other process has it (RunUidPool::Acquire), so
      // nothing can signal or trace the worker while it waits under it; under the shared
      // run-as uid any connection's run could (CellSpec::ids_ahead).
      cell.ids_ahead = true;
      cell.uid = lease->uid();
      cell.gid = config_.gid;
    }
  }
  // why only with the run's own identity settled (a uid of its own, or no switch): the
  // view's user namespace maps the identity the worker has when it builds it.
  if (config_.namespaces && (cell.ids_ahead || !config_.switch_ids)) {
    cell.view_ahead = true;
    cell.hidden_roots = config_.hidden_roots;
    // In the declared network mode the run's network namespace too, made with the
    // capabilities over the view's user namespace (CellSpec::network_ahead); its rules'
    // listeners and resolver files come with the description.
    cell.network_ahead = config_.egress_declared;
  }
  // why only with the run's identity settled, and for a namespaced run only with its view
  // ahead: each rule's path is opened as the run's user and in the run's view, as it would
  // be at the run (CellSpec::landlock_ahead).
  if (config_.landlock_abi > 0 && (cell.ids_ahead || !config_.switch_ids) &&
      (!config_.namespaces || cell.view_ahead)) {
    cell.landlock_ahead = true;
    cell.landlock_abi = config_.landlock_abi;
    cell.network_off = config_.network_off && config_.landlock_abi >= 4;
    cell.node_dir_path = interpreter.dir;
  }
  std::optional<std::string> frame = EncodeCellSpec(cell);
  // A cell too long for the worker's bound (a long interpreter directory, many long roots): the
  // rules, then the view with the network, follow the description instead, as for the
  // shared run-as uid (a namespaced run's rules need the view ahead, so they go first).
  if (!frame && cell.landlock_ahead) {
    cell.landlock_ahead = false;
    cell.landlock_abi = 0;
    cell.network_off = false;
    cell.node_dir_path.clear();
    frame = EncodeCellSpec(cell);
  }
  if (!frame && cell.view_ahead) {
    cell.view_ahead = false;
    cell.hidden_roots.clear();
    cell.network_ahead = false;  // it needs the view's user namespace
    frame = EncodeCellSpec(cell);
  }
  SpawnRequest req;
  req.worker_fd = config_.worker.get();
  req.node_fd = interpreter.fd.get();
  req.spec_socket = true;  // 6 and 7 come with the description
  // why: as for every run: an unprivileged broker holding CAP_SETUID/CAP_SETGID passes
  // them on as ambient caps; the worker clears them itself.
  req.raise_ambient_setid = config_.switch_ids && geteuid() != 0;
  SpawnOutcome spawned = SpawnWorker(req);
  if (!spawned.spawned) {
    out.error = spawned.error;
    return out;
  }
  // why MSG_DONTWAIT: the loop never blocks; a new socket's buffer holds the small frame
  // whole, and a worker that cannot be told its cell is not used.
  const ssize_t n = frame ? send(spawned.spawned->spec.get(), frame->data(), frame->size(),
                                 MSG_DONTWAIT | MSG_NOSIGNAL)
                          : -1;
  const int err = n < 0 ? errno : 0;
  // A worker already gone (its exec failed: it wrote its report and exited) is handed
  // out all the same: its report and exit tell the run what failed, as for a description.
  const bool gone = n < 0 && (err == EPIPE || err == ECONNRESET);
  if (!frame || (n != static_cast<ssize_t>(frame->size()) && !gone)) {
    out.error = SpawnError{"send", !frame ? EINVAL : n < 0 ? err : EMSGSIZE};
    KillAndReap(*spawned.spawned);
    return out;  // the lease goes back now that its worker is reaped
  }
  // The run's TMPDIR, off its path too. why only for a uid of its own: no other process
  // holds that uid (RunUidPool::Acquire), so nothing can put anything in the directory
  // while the worker waits; under the shared run-as uid it is made at the run. A failure
  // here leaves it to the run, which refuses with the reason.
  std::unique_ptr<ScratchDir> scratch;
  if (lease) {
    scratch =
        ScratchDir::Create(config_.scratch_base, config_.switch_ids, lease->uid(), config_.gid);
    if (!scratch)
      LOG_WARN_ERRNO("cannot make the next run's scratch directory in %s ahead; its run will try",
                     config_.scratch_base.c_str());
  }
  out.worker =
      PooledWorker{std::move(*spawned.spawned), &interpreter, std::move(lease), std::move(scratch)};
  return out;
}

void WorkerPool::Discard() {
  if (!idle_) return;
  KillAndReap(idle_->spawned);
  idle_.reset();  // the lease goes back once its worker is reaped
}

TakeOutcome WorkerPool::Take(const PinnedInterpreter& interpreter) {
  next_ = &interpreter;
  // why: fd 5 and the Landlock rules ahead are the interpreter's; a worker waiting with
  // another's is not used (the next refill is for this one).
  if (idle_ && idle_->interpreter != &interpreter) Discard();
  if (idle_) {
    siginfo_t info{};
    const int rc =
        waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(idle_->spawned.pidfd.get()), &info,
               WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == 0) {  // alive and waiting for its description
      TakeOutcome o;
      o.worker = std::move(idle_);
      idle_.reset();
      return o;
    }
    Discard();  // it died (or was reaped) while waiting: start another
  }
  return Start(interpreter);
}

void WorkerPool::Refill() {
  if (idle_ || !config_.ready() || config_.namespaces_pending || config_.hidden_roots_pending ||
      config_.seccomp_pending)
    return;
  if (next_ == nullptr) next_ = &config_.interpreters.front();  // ready(): never empty
  TakeOutcome o = Start(*next_);
  if (o.worker) idle_ = std::move(o.worker);  // else the next run starts its own
}

ssize_t SendRunDescription(int spec_fd, const std::string& bytes, int script_fd, int skill_dir_fd,
                           int egress_fd) {
  const int fds[3] = {script_fd, skill_dir_fd, egress_fd};
  const size_t count = egress_fd >= 0 ? 3 : 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(count * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds, count * sizeof(int));
  // why: MSG_NOSIGNAL: a worker that died first is EPIPE here, its exit tells the rest.
  return sendmsg(spec_fd, &msg, MSG_NOSIGNAL);
}

}  // namespace skillmcp
