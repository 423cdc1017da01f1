#include "worker/limits.h"

#include <cerrno>

namespace skillmcp::worker {

std::vector<LimitSetting> PlanLimits(const RunLimits& limits) {
  // Core dumps off: a core file would hold whatever secret the script was granted.
  std::vector<LimitSetting> plan{{RLIMIT_CORE, 0, 0}};
  auto add = [&plan](int resource, uint64_t value, uint64_t hard_extra = 0) {
    if (value == 0) return;
    const rlim_t v = static_cast<rlim_t>(value);
    const rlim_t hard = v + hard_extra < v ? RLIM_INFINITY : v + hard_extra;
    plan.push_back({resource, v, hard});
  };
  add(RLIMIT_NPROC, limits.nproc);       // fork bombs (counts threads, per real uid)
  add(RLIMIT_AS, limits.address_space);  // runaway address space
  add(RLIMIT_DATA, limits.data);         // memory bombs (private writable memory)
  // CPU: the soft limit sends SIGXCPU, the hard one a second later SIGKILL, so a
  // script that ignores SIGXCPU still stops.
  add(RLIMIT_CPU, limits.cpu_seconds, 1);
  add(RLIMIT_FSIZE, limits.fsize);    // disk fill: writes past it get SIGXFSZ/EFBIG
  add(RLIMIT_NOFILE, limits.nofile);  // descriptor exhaustion
  return plan;
}

StepResult ApplyLimits(const RunLimits& limits) {
  for (const LimitSetting& s : PlanLimits(limits)) {
    struct rlimit current;
    if (getrlimit(s.resource, &current) != 0) return StepFailed(WorkerStep::kSetLimits, errno);
    struct rlimit wanted {
      s.soft, s.hard
    };
    if (current.rlim_max != RLIM_INFINITY) {
      if (wanted.rlim_max > current.rlim_max) wanted.rlim_max = current.rlim_max;
      if (wanted.rlim_cur > wanted.rlim_max) wanted.rlim_cur = wanted.rlim_max;
    }
    if (setrlimit(s.resource, &wanted) != 0) return StepFailed(WorkerStep::kSetLimits, errno);
  }
  return StepOk();
}

}  // namespace skillmcp::worker
