#include "broker/run/finishing_workers.h"

#include <sys/epoll.h>
#include <sys/wait.h>

#include <cerrno>
#include <utility>

#include "shared/log.h"

namespace skillmcp {

FinishingWorkers::FinishingWorkers(EventLoop& loop, Reaper& reaper, std::function<void()> cleared)
    : loop_(loop), reaper_(reaper), cleared_(std::move(cleared)) {}

void FinishingWorkers::Add(pid_t pid, UniqueFd pidfd, std::optional<RunUidLease> uid_lease,
                           bool watch_worker) {
  auto f = std::make_unique<Worker>();
  f->pid = pid;
  f->pidfd = std::move(pidfd);
  f->uid_lease = std::move(uid_lease);
  const int fd = f->pidfd.get();
  // The worker's exit, watched where it is not reaped yet; else, and without the watch,
  // the reaper's delayed sweeps find the rest gone (WhenClear).
  if (watch_worker && !loop_.AddFd(fd, EPOLLIN, [this, fd](uint32_t) { OnExit(fd); }))
    LOG_WARN_ERRNO("cannot watch worker %d's exit; it is reaped by the next sweeps",
                   static_cast<int>(pid));
  f->warn_timer = loop_.AddTimer(kShutdownReapMs, [this, pid] {
    for (auto& w : workers_)
      if (w->pid == pid) w->warn_timer = 0;
    LOG_WARN(
        "the run of worker %d has processes left %lld ms after its end; its uid stays taken "
        "and no worker is started ahead until they are reaped",
        static_cast<int>(pid), static_cast<long long>(kShutdownReapMs));
  });
  workers_.push_back(std::move(f));
}

void FinishingWorkers::OnExit(int pidfd) {
  siginfo_t info{};
  const int rc =
      waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG);
  if (rc == 0 && info.si_pid == 0) return;  // not yet
  if (rc != 0 && errno == EINTR) return;    // the loop calls again
  loop_.RemoveFd(pidfd);                    // reaped now, or by a sweep (ECHILD)
  ReaperClear();
}

void FinishingWorkers::ReaperClear() {
  if (workers_.empty()) return;
  // why a sweep: a worker killed before it reaped its run's init hands that init to us,
  // and the uid must not go back while any process holds it. Finishing workers are not
  // spared, so nothing left means every one of them is reaped, with what it left.
  reaper_.Sweep();
  if (reaper_.left() > 0) return;  // WhenClear calls again
  for (auto& f : workers_) {
    loop_.RemoveFd(f->pidfd.get());
    if (f->warn_timer) loop_.CancelTimer(f->warn_timer);
  }
  workers_.clear();  // the uids go back
  if (cleared_) cleared_();
}

std::vector<std::optional<RunUidLease>> FinishingWorkers::Drop() {
  std::vector<std::optional<RunUidLease>> leases;
  for (auto& f : workers_) {
    loop_.RemoveFd(f->pidfd.get());
    if (f->warn_timer) loop_.CancelTimer(f->warn_timer);
    leases.push_back(std::move(f->uid_lease));
  }
  workers_.clear();  // their workers are the broker's children: the caller's sweep reaps them
  return leases;
}

}  // namespace skillmcp
