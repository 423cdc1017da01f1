// The MCP surface: handshake, tools, prompts, resources, cancellation. Protocol only;
// the tools themselves live in broker/tools/.
#pragma once

#include <string>

#include "broker/mcp/session.h"
#include "broker/tools/skills_ext.h"
#include "broker/tools/tool.h"

namespace skillmcp {

inline constexpr const char* kServerName = "skill-mcp";
// Oldest first; an unsupported client version is answered with the newest.
inline constexpr const char* kProtocolVersions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                    "2025-11-25"};

class McpServer {
 public:
  McpServer(Session& session, CatalogueView view, std::string version, RunToolHandler* run);
  void Register();

 private:
  void Initialize(const RpcMessage& m, Reply reply);
  void CallTool(const RpcMessage& m, Reply reply);

  Session& session_;
  CatalogueView view_;
  std::string version_;
  RunToolHandler* run_;
  SkillsExtension skills_ext_;  // skills/list, skills/get, resources/directory/read
  bool client_elicits_ = false;
  std::string protocol_;
};

}  // namespace skillmcp
