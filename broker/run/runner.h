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
  // Starts the run. nullopt when started (on_done is then called exactly once, later),
  // or why it could not start (on_done is not called then).
  virtual std::optional<StartRefusal> Start(PreparedRun run, Done on_done) = 0;
  // Kills the run in flight, if any; it then settles as usual.
  virtual void Cancel() = 0;
};

}  // namespace skillmcp
