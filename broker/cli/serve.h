#pragma once

namespace skillmcp {

// `skill-mcp serve`: boots (see boot.h), then answers MCP on stdin/stdout until EOF or
// SIGTERM, killing any running script's process group before it exits.
int RunServe();

// `skill-mcp doctor`: the same boot, then the isolation report on stdout; non-zero when
// a layer the configuration demands is off.
int RunDoctorCommand();

}  // namespace skillmcp
