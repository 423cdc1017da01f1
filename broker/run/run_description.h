// The run description a worker is sent on fd 3 (shared/worker_protocol.h, RunSpec) for one
// prepared run: what to run, the variables' values, the identity, the limits and the
// layers of the launch configuration, and the run's own scratch directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "broker/harden/env_store.h"
#include "broker/run/launch_config.h"
#include "broker/run/prepared_run.h"

namespace skillmcp {

// The encoded description, or nullopt when it is not acceptable (a NUL in an argument or
// a value, or over the size limit). The variables' values exist in plain memory only
// while it is encoded: the caller wipes the bytes returned (WipeString) once they are sent.
std::optional<std::string> EncodeRunDescription(const PreparedRun& run,
                                                const PinnedInterpreter& interpreter,
                                                const LaunchConfig& config, const EnvStore& env,
                                                const std::string& scratch, uint32_t uid);

// Zeroes the bytes, then empties the string.
void WipeString(std::string& s);

}  // namespace skillmcp
