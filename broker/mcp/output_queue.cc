#include "broker/mcp/output_queue.h"

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

#include "shared/log.h"

namespace skillmcp {
OutputQueue::OutputQueue(EventLoop& loop, int fd) : loop_(loop), raw_fd_(fd) {}

OutputQueue::~OutputQueue() {
  if (stall_timer_ != 0) loop_.CancelTimer(stall_timer_);
  if (out_.kind() != StdioFd::Kind::kPlain) loop_.RemoveFd(out_.fd());
}

bool OutputQueue::Start(Events events) {
  events_ = std::move(events);
  out_.Open(raw_fd_, /*for_write=*/true);
  if (out_.kind() == StdioFd::Kind::kPlain) return true;
  // Registered now with no events, so a descriptor epoll refuses is known at once.
  auto on_event = [this](uint32_t ev) {
    // Why: epoll reports a closed reader even with no events asked for; the client that
    // closed its end of stdout is gone, and waiting on it would spin the loop.
    if ((ev & (EPOLLERR | EPOLLHUP)) != 0) return Break("the client closed stdout");
    Flush();
  };
  if (loop_.AddFd(out_.fd(), 0, on_event)) return true;
  if (errno != EPERM) return false;
  out_.MarkNotPollable();
  return true;
}

void OutputQueue::Push(std::string line) {
  if (broken_ || line.empty()) return;
  queue_.Push(std::move(line));
  if (!watching_) Flush();  // otherwise EPOLLOUT will call Flush
}

void OutputQueue::Push(std::string head, std::string body, std::string tail) {
  if (broken_) return;
  for (std::string* p : {&head, &body, &tail}) queue_.Push(std::move(*p));
  if (!watching_) Flush();
}

OutputQueue::Step OutputQueue::WriteSome() {
  const size_t before = queue_.bytes();
  switch (queue_.WriteSome(out_)) {
    case ByteQueue::Step::kBroken:
      return Step::kBroken;
    case ByteQueue::Step::kWouldBlock:
      return Step::kWouldBlock;
    case ByteQueue::Step::kProgress:
      break;
  }
  if (queue_.bytes() != before) last_progress_ms_ = EventLoop::NowMs();
  return Step::kDone;
}

void OutputQueue::Flush() {
  while (!queue_.empty() && !broken_) {
    Step s = WriteSome();
    if (s == Step::kBroken) return Break(nullptr);
    if (s == Step::kWouldBlock) break;
  }
  Watch(!queue_.empty());
  if (queue_.bytes() <= kOutputPauseBytes / 2 && events_.below_pause) events_.below_pause();
}

void OutputQueue::Break(const char* why) {
  if (why != nullptr) {
    LOG_WARN("%s; the client is gone", why);
  } else {
    LOG_WARN_ERRNO("could not write to stdout; the client is gone");
  }
  broken_ = true;
  queue_.Clear();
  if (out_.kind() != StdioFd::Kind::kPlain) loop_.RemoveFd(out_.fd());
  watching_ = false;
  if (stall_timer_ != 0) loop_.CancelTimer(stall_timer_);
  stall_timer_ = 0;
  if (events_.broken) events_.broken();
}

void OutputQueue::Watch(bool want) {
  if (want == watching_ || out_.kind() == StdioFd::Kind::kPlain) return;
  watching_ = want;
  loop_.ModifyFd(out_.fd(), want ? uint32_t{EPOLLOUT} : 0u);
  if (want) {
    last_progress_ms_ = EventLoop::NowMs();
    ArmStallTimer();
  } else if (stall_timer_ != 0) {
    loop_.CancelTimer(stall_timer_);
    stall_timer_ = 0;
  }
}

void OutputQueue::ArmStallTimer() {
  if (stall_timer_ != 0) loop_.CancelTimer(stall_timer_);
  int64_t due = last_progress_ms_ + kStalledClientGraceMs - EventLoop::NowMs();
  stall_timer_ = loop_.AddTimer(due, [this] { OnStallTimer(); });
}

void OutputQueue::OnStallTimer() {
  stall_timer_ = 0;
  if (!watching_) return;
  // Progress since the timer was set moves the deadline instead of dropping the client.
  if (EventLoop::NowMs() - last_progress_ms_ < kStalledClientGraceMs) {
    ArmStallTimer();
    return;
  }
  LOG_WARN("the client has read none of %zu queued byte(s) for %lld s; dropping it", queue_.bytes(),
           static_cast<long long>(kStalledClientGraceMs / 1000));
  if (events_.stalled) events_.stalled();
}

void OutputQueue::DrainBlocking(int stall_ms, int64_t total_ms) {
  const int64_t deadline = EventLoop::NowMs() + total_ms;
  while (!queue_.empty() && !broken_) {
    Step s = WriteSome();
    if (s == Step::kBroken) break;
    if (s == Step::kDone) continue;
    const int64_t left = deadline - EventLoop::NowMs();
    pollfd p{out_.fd(), POLLOUT, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(std::min<int64_t>(stall_ms, left))) <= 0) {
      LOG_WARN("%zu byte(s) of output never reached the client", queue_.bytes());
      break;
    }
  }
}

}  // namespace skillmcp
