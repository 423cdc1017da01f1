// A run started with nothing to commit, as the tests of the run side start them; skill_run
// always passes its commit step (broker/run/runner.h).
#pragma once

#include <optional>
#include <utility>

#include "broker/run/runner.h"

namespace skillmcp {

inline std::optional<StartRefusal> StartRun(Runner& runner, PreparedRun run, Runner::Done done) {
  return runner.StartCommitted(std::move(run), nullptr, std::move(done));
}

}  // namespace skillmcp
