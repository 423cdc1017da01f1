// One skill_run at a time, supervised on the broker's event loop: fork, lay out the
// descriptors of shared/run_spec.h, exec the worker by descriptor, hand it the RunSpec,
// then drain stdout/stderr, watch the status pipe and the pidfd, enforce the timeout
// (SIGTERM to the group, SIGKILL 2 s later) and settle on exit plus a 250 ms drain,
// under a hard deadline of timeout + 3.25 s. Nothing here blocks the loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/harden/env_store.h"
#include "broker/loop/event_loop.h"
#include "broker/run/launch_config.h"
#include "broker/run/reaper.h"
#include "broker/run/receipt.h"

namespace skillmcp {

inline constexpr int64_t kKillGraceMs = 2000;          // SIGTERM -> SIGKILL
inline constexpr int64_t kDrainMs = 250;               // after the worker exited
inline constexpr int64_t kHardDeadlineExtraMs = 3250;  // timeout + this: settle whatever happens
inline constexpr int64_t kShutdownReapMs = 3000;       // at exit, for leftovers to die

struct RunRequest {
  std::string skill;             // directory name, for the receipt
  std::string script;            // declared relative path, already string-checked
  int skill_dir_fd = -1;         // Skill::dir (borrowed; O_PATH|O_DIRECTORY)
  std::string skill_dir_path;    // Skill::source: its real path (the run's view binds it)
  std::string script_real_path;  // real absolute path (node's module identity)
  std::vector<std::string> args;
  std::vector<std::string> env_names;  // sorted; values come from the EnvStore
  int64_t timeout_ms = 60000;
  std::optional<std::string> network_note;
};

struct RunOutcome {
  bool ran = false;                // the script was started: `receipt` holds the result
  std::string error;               // !ran: what went wrong and what to do (setup failure)
  std::optional<int> failed_step;  // !ran and the worker reported a WorkerStep
  nlohmann::ordered_json receipt;
};

class RunSupervisor {
 public:
  using Done = std::function<void(RunOutcome)>;

  // `loop`, `config` and `env` must outlive the supervisor. SIGPIPE must be ignored
  // (HardenProcess does it): the spec is written to a pipe the worker may have closed.
  RunSupervisor(EventLoop& loop, const LaunchConfig& config, const EnvStore& env);
  ~RunSupervisor();  // KillAndReapNow()
  RunSupervisor(const RunSupervisor&) = delete;
  RunSupervisor& operator=(const RunSupervisor&) = delete;

  bool Busy() const { return run_ != nullptr; }

  // Starts a run. Returns "" when started (on_done is then called exactly once, from
  // the loop), or why it was refused (busy, runs unavailable, script not openable
  // beneath the skill directory, fork failure): on_done is not called then.
  std::string Start(RunRequest request, Done on_done);

  // Kills the run's whole process group; the run then settles as usual (signal SIGKILL).
  void Cancel();

  // Shutdown (client gone, SIGTERM): SIGKILL to the group, drop the run, then kill and
  // reap every child left (the run's and earlier runs' leftovers), waiting at most
  // kShutdownReapMs. on_done is not called. Nothing a run started outlives its client.
  void KillAndReapNow();

  // Leftovers of finished runs still dying (tests).
  size_t leftovers() const { return reaper_.left(); }

  pid_t pid() const;  // the worker's pid while a run is active, else -1 (tests)

 private:
  struct Run;
  void OnPipe(int which, uint32_t events);
  void OnSpecWritable();
  void OnStatus(uint32_t events);
  void OnExit();
  void OnTimeout();
  void SignalGroup(int sig);
  void MaybeSettle();
  void Settle();
  void Teardown();

  EventLoop& loop_;
  const LaunchConfig& config_;
  const EnvStore& env_;
  std::unique_ptr<Run> run_;
  Reaper reaper_;  // kills and reaps what finished runs leave behind
};

}  // namespace skillmcp
