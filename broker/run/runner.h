// What skill_run needs from the run side: start one prepared run, know whether one is in
// flight, cancel it. RunSupervisor implements it on the event loop; tests use a fake.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "broker/run/prepared_run.h"
#include "broker/run/run_result.h"

namespace skillmcp {

class Runner {
 public:
  using Done = std::function<void(RunResult)>;
  virtual ~Runner() = default;

  virtual bool Busy() const = 0;
  // Decides at the last moment whether the run may start (skill_run spends the user's
  // approval here); false withdraws it.
  using Commit = std::function<bool()>;
  // Starts the run: nullopt when started (on_done is then called exactly once, later), or
  // why it could not start (on_done is not called then). `commit` (may be empty) is called
  // once everything that can still refuse the run has succeeded, right before the script
  // could begin; when it returns false nothing runs, what was taken is given back and a
  // kUnavailable refusal is returned (the caller knows why). Why: an approval must not be
  // used up by a run that then fails to start.
  virtual std::optional<StartRefusal> StartCommitted(PreparedRun run, Commit commit,
                                                     Done on_done) = 0;
  // Kills the run in flight, if any; it then settles as usual.
  virtual void Cancel() = 0;
};

}  // namespace skillmcp
