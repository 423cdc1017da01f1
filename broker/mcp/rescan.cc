#include "broker/mcp/rescan.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "shared/log.h"

namespace skillmcp {

Rescan::Rescan(EventLoop& loop, Job job) : loop_(loop), job_(std::move(job)) {}

Rescan::~Rescan() {
  if (timer_ != 0) loop_.CancelTimer(timer_);
  if (thread_.joinable()) thread_.join();
  if (done_fd_.valid()) loop_.RemoveFd(done_fd_.get());
}

bool Rescan::Open() {
  done_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!done_fd_.valid()) return false;
  return loop_.AddFd(done_fd_.get(), EPOLLIN, [this](uint32_t) { OnDone(); });
}

void Rescan::Changed() {
  if (running_) {
    queued_ = true;
    return;
  }
  const int64_t now = EventLoop::NowMs();
  if (first_change_ms_ < 0) first_change_ms_ = now;
  // Why a ceiling: a tree that never stops changing (a build writing into it) still gets
  // rescanned, at most once per kRescanMaxWaitMs.
  const int64_t delay =
      std::clamp<int64_t>(first_change_ms_ + kRescanMaxWaitMs - now, 0, kRescanQuietMs);
  if (timer_ != 0) loop_.CancelTimer(timer_);
  timer_ = loop_.AddTimer(delay, [this] {
    timer_ = 0;
    first_change_ms_ = -1;
    Start(job_);
  });
}

void Rescan::RunNow(Job once) {
  if (running_) return;
  Start(std::move(once));
}

void Rescan::Start(Job job) {
  running_ = true;
  try {
    thread_ = std::thread([this, job = std::move(job)] {
      apply_ = job();
      const uint64_t one = 1;
      // The loop reads it; a full counter cannot happen with one job at a time.
      (void)!write(done_fd_.get(), &one, sizeof one);
    });
  } catch (const std::system_error& e) {
    running_ = false;
    LOG_WARN("could not start a thread to rescan the skills (%s); the lists stay as they are",
             e.what());
  }
}

void Rescan::OnDone() {
  uint64_t n = 0;
  if (read(done_fd_.get(), &n, sizeof n) != sizeof n) return;
  if (thread_.joinable()) thread_.join();  // after the join, apply_ is the thread's
  running_ = false;
  ++completed_;
  std::function<void()> apply = std::move(apply_);
  apply_ = nullptr;
  if (apply) apply();
  if (queued_) {
    queued_ = false;
    Changed();
  }
}

}  // namespace skillmcp
