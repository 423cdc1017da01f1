#pragma once

#include <string>

namespace skillmcp {

// `skill-mcp connect [SOCKET]`: relays stdin/stdout to a socket-activated skill-mcp, so an
// MCP client can spawn a stdio command for a system service. Returns the exit code.
int RunConnect(const std::string& socket_path);

}  // namespace skillmcp
