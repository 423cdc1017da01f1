#pragma once

namespace skillmcp {

// `skill-mcp serve`: hardens the process, captures and wipes the environment, scans the
// catalogue once, then answers MCP on stdin/stdout until EOF or SIGTERM. Returns the exit
// code.
int RunServe();

}  // namespace skillmcp
