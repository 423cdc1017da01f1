#include "broker/loop/event_loop.h"

#include <sys/epoll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace skillmcp {

EventLoop::EventLoop() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {}

int64_t EventLoop::NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool EventLoop::AddFd(int fd, uint32_t events, FdCallback callback) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  fds_[fd] = std::make_shared<FdCallback>(std::move(callback));
  return true;
}

bool EventLoop::ModifyFd(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  return epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) == 0;
}

void EventLoop::RemoveFd(int fd) {
  if (fds_.erase(fd) > 0) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

EventLoop::TimerId EventLoop::AddTimer(int64_t delay_ms, TimerCallback callback) {
  TimerId id = next_timer_++;
  int64_t deadline = NowMs() + std::max<int64_t>(delay_ms, 0);
  deadlines_.emplace(deadline, id);
  timers_.emplace(id, std::make_pair(deadline, std::move(callback)));
  return id;
}

void EventLoop::CancelTimer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  auto [lo, hi] = deadlines_.equal_range(it->second.first);
  for (auto d = lo; d != hi; ++d) {
    if (d->second == id) {
      deadlines_.erase(d);
      break;
    }
  }
  timers_.erase(it);
}

int EventLoop::NextTimeoutMs(int max_wait_ms) const {
  if (deadlines_.empty()) return max_wait_ms;
  int64_t wait = std::max<int64_t>(deadlines_.begin()->first - NowMs(), 0);
  if (max_wait_ms >= 0) wait = std::min<int64_t>(wait, max_wait_ms);
  return static_cast<int>(std::min<int64_t>(wait, 1 << 30));
}

void EventLoop::FireDueTimers() {
  int64_t now = NowMs();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    TimerId id = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;
    TimerCallback cb = std::move(it->second.second);
    timers_.erase(it);
    cb();
  }
}

void EventLoop::RunOnce(int max_wait_ms) {
  epoll_event events[32];
  int n = epoll_wait(epoll_.get(), events, 32, NextTimeoutMs(max_wait_ms));
  if (n < 0 && errno != EINTR) {
    stopped_ = true;
    return;
  }
  for (int i = 0; i < n; ++i) {
    auto it = fds_.find(events[i].data.fd);
    if (it == fds_.end()) continue;  // removed by an earlier callback this round
    std::shared_ptr<FdCallback> cb = it->second;  // survives its own RemoveFd
    (*cb)(events[i].events);
  }
  FireDueTimers();
}

void EventLoop::Run() {
  while (!stopped_ && (!fds_.empty() || !timers_.empty())) RunOnce(-1);
}

}  // namespace skillmcp
