// The MCP surface: handshake, tools, prompts, resources, cancellation. Protocol only;
// the tools themselves live in broker/tools/.
#pragma once

#include <string>

#include "broker/audit/audit_peer.h"
#include "broker/mcp/era.h"
#include "broker/mcp/late_catalogue.h"
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
  // The catalogue is scanned after start (broker/mcp/late_catalogue.h): every request that
  // reads it loads it first, and answering initialize or server/discover schedules it.
  void SetLateCatalogue(LateCatalogue* late) { late_ = late; }
  // Where the client's name and version go for the audit trail (docs/audit.md): from
  // initialize's clientInfo, or a 2026-07-28 request's _meta clientInfo.
  void SetAuditConnection(AuditConnection* connection) { audit_ = connection; }
  // Whether the lists may change while the server runs (SKILL_MCP_WATCH): initialize then
  // advertises listChanged. Set before the first request.
  void SetListsMayChange(bool may) { lists_may_change_ = may; }
  // Replaces the catalogue with `swap`, on the loop, and tells a 2025 client that
  // finished its handshake which of tools/list, prompts/list and resources/list now
  // answer differently (notifications/<list>/list_changed). Returns how many were sent.
  int SwapCatalogue(const std::function<void()>& swap);

 private:
  // Which lifecycle the connection follows (docs/wire.md §8): none yet, 2025 (fixed by
  // initialize) or 2026-07-28 (fixed by the first request served under it).
  enum class Era { kUnset, kLegacy, kModern };
  using Handler = std::function<void(const RpcMessage&, Reply, const Envelope&)>;
  // Registers `method` behind the era checks: a 2025 request reaches `handler` as today,
  // a 2026 one with its reply stamped; the others are refused here.
  void On(const std::string& method, Handler handler);
  bool Admit(const std::string& method, const Envelope& e, Reply& reply);
  void Initialize(const RpcMessage& m, Reply reply);
  void Discover(Reply reply);
  void CallTool(const RpcMessage& m, Reply reply, const Envelope& e);
  std::string Instructions() const;
  // tools/list, prompts/list or resources/list, serialised once per catalogue.
  const std::string& ListText(const std::string& list);
  Json ServerInfo() const;

  Session& session_;
  CatalogueView view_;
  std::string version_;
  RunToolHandler* run_;
  LateCatalogue* late_ = nullptr;
  AuditConnection* audit_ = nullptr;
  SkillsExtension skills_ext_;  // skills/list, skills/get, resources/directory/read
  bool client_elicits_ = false;
  bool lists_may_change_ = false;
  bool initialized_ = false;  // notifications/initialized came
  std::string protocol_;
  Era era_ = Era::kUnset;
};

}  // namespace skillmcp
