#include "broker/run/reaper.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <utility>

#include "shared/log.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

constexpr int64_t kFirstDelayMs = 5;
constexpr int64_t kMaxDelayMs = 1000;

// Appends the pids listed in one /proc/self/task/<tid>/children file.
void ReadChildrenFile(const std::string& path, std::vector<pid_t>& out) {
  std::string text;
  int err = 0;
  if (!ReadSmallFile(path.c_str(), &text, &err)) return;
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    long v = strtol(p, &end, 10);
    if (end == p) break;
    if (v > 0) out.push_back(static_cast<pid_t>(v));
    p = end;
  }
}

}  // namespace

bool BecomeSubreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<pid_t> ListChildren() {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ReadChildrenFile(std::string("/proc/self/task/") + e->d_name + "/children", out);
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Reaper::Reaper(EventLoop& loop, std::function<pid_t()> active_run)
    : loop_(loop), active_run_(std::move(active_run)) {}

Reaper::~Reaper() {
  if (timer_) loop_.CancelTimer(timer_);
}

size_t Reaper::SweepOnce(pid_t spare) {
  size_t left = 0;
  std::vector<pid_t> spared;
  for (const auto& f : spared_) spared.push_back(f());
  for (pid_t pid : ListChildren()) {
    // The worker waiting for the next run's description, and the egress helper, are no
    // leftovers.
    if (pid > 0 && std::find(spared.begin(), spared.end(), pid) != spared.end()) continue;
    // A child of ours cannot be reaped by anyone else, so pid and group stay its own.
    // Before its setsid() the active worker is still in our group: spared by pid.
    if (spare > 0 && (pid == spare || getpgid(pid) == spare)) continue;
    // why: between runs nothing but a finished run's leftovers is our child; none may
    // outlive its run (it could hold files, ports or the user's data).
    kill(pid, SIGKILL);
    siginfo_t info{};
    int rc;
    do {
      rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0 && info.si_pid == pid) {
      ++reaped_;
    } else {
      ++left;  // SIGKILL is delivered but the process has not finished dying yet
    }
  }
  return left;
}

size_t Reaper::SweepPasses(pid_t spare) {
  // why again after a reap: the children of a process we reaped were re-parented to us
  // before it could be reaped, after our list was read; a pass that reaps nothing has
  // seen every child there is (a run's init handed over by its dying worker, say).
  for (;;) {
    const uint64_t before = reaped_;
    const size_t left = SweepOnce(spare);
    if (left > 0 || reaped_ == before) return left;
  }
}

void Reaper::Sweep() {
  if (timer_) {
    loop_.CancelTimer(timer_);
    timer_ = 0;
  }
  delay_ms_ = kFirstDelayMs;
  left_ = SweepPasses(active_run_());
  if (left_ > 0) Arm();
}

void Reaper::Arm() {
  timer_ = loop_.AddTimer(delay_ms_, [this] {
    timer_ = 0;
    left_ = SweepPasses(active_run_());
    if (left_ == 0) {
      if (clear_) clear_();
      return;
    }
    delay_ms_ = std::min(delay_ms_ * 2, kMaxDelayMs);
    Arm();
  });
}

bool Reaper::SweepAndWait(int64_t timeout_ms) {
  if (timer_) {
    loop_.CancelTimer(timer_);
    timer_ = 0;
  }
  const int64_t deadline = EventLoop::NowMs() + timeout_ms;
  for (;;) {
    left_ = SweepPasses(active_run_());
    if (left_ == 0) return true;
    if (EventLoop::NowMs() >= deadline) return false;
    poll(nullptr, 0, 2);
  }
}

}  // namespace skillmcp
