#include "broker/mcp/server.h"

#include "broker/confirm/gate_config.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/surfaces.h"
#include "broker/tools/tool_definitions.h"

namespace skillmcp {

McpServer::McpServer(Session& session, CatalogueView view, std::string version,
                     RunToolHandler* run)
    : session_(session), view_(view), version_(std::move(version)), run_(run), skills_ext_(view) {}

void McpServer::Register() {
  session_.OnRequest("initialize", [this](const RpcMessage& m, Reply r) { Initialize(m, r); });
  session_.OnRequest("ping", [](const RpcMessage&, Reply r) { r.ResultJson("{}"); });
  // The lists are fixed while the process lives: serialised once (README.md "Performance").
  session_.OnRequest("tools/list", [this](const RpcMessage&, Reply r) {
    r.ResultJson(view_.cache->Get("tools/list", [this] {
      return DumpJson(ToolDefinitions(run_ != nullptr));
    }));
  });
  session_.OnRequest("tools/call", [this](const RpcMessage& m, Reply r) { CallTool(m, r); });
  session_.OnRequest("prompts/list", [this](const RpcMessage&, Reply r) {
    r.ResultJson(view_.cache->Get("prompts/list", [this] { return DumpJson(PromptsList(view_)); }));
  });
  session_.OnRequest("resources/list", [this](const RpcMessage&, Reply r) {
    r.ResultJson(
        view_.cache->Get("resources/list", [this] { return DumpJson(ResourcesList(view_)); }));
  });
  session_.OnRequest("resources/templates/list", [](const RpcMessage&, Reply r) {
    r.Result(OrderedJson{{"resourceTemplates", OrderedJson::array()}});
  });
  auto answer = [](Reply r, SurfaceAnswer a) {
    if (a.error_code != 0) {
      r.Error(a.error_code, a.error_message, std::move(a.error_data));
    } else if (!a.result_json.empty()) {
      r.ResultJson(std::move(a.result_json));
    } else {
      r.Result(std::move(a.result));
    }
  };
  session_.OnRequest("prompts/get", [this, answer](const RpcMessage& m, Reply r) {
    answer(r, PromptsGet(view_, m.params.is_object() ? m.params : Json::object()));
  });
  session_.OnRequest("resources/read", [this, answer](const RpcMessage& m, Reply r) {
    answer(r, ResourcesRead(view_, m.params.is_object() ? m.params : Json::object()));
  });
  // The Skills over MCP extension (broker/tools/skills_ext.h).
  session_.OnRequest("skills/list", [this, answer](const RpcMessage& m, Reply r) {
    answer(r, skills_ext_.List(m.params.is_object() ? m.params : Json::object()));
  });
  session_.OnRequest("skills/get", [this, answer](const RpcMessage& m, Reply r) {
    answer(r, skills_ext_.Get(m.params.is_object() ? m.params : Json::object()));
  });
  session_.OnRequest("resources/directory/read", [this, answer](const RpcMessage& m, Reply r) {
    answer(r, skills_ext_.ReadDirectory(m.params.is_object() ? m.params : Json::object()));
  });
  session_.OnNotification("notifications/initialized", [](const RpcMessage&) {});
  session_.OnNotification("notifications/cancelled", [this](const RpcMessage& m) {
    if (!m.params.is_object() || !m.params.contains("requestId")) return;
    const Json& id = m.params["requestId"];
    if (run_ != nullptr) run_->Cancel(id);
    session_.CancelInFlight(id);
  });
}

void McpServer::Initialize(const RpcMessage& m, Reply reply) {
  std::string requested;
  if (m.params.is_object()) {
    auto v = m.params.find("protocolVersion");
    if (v != m.params.end() && v->is_string()) requested = v->get<std::string>();
  }
  protocol_ = std::end(kProtocolVersions)[-1];
  for (const char* v : kProtocolVersions) {
    if (requested == v) protocol_ = v;
  }
  // Why: only a client that offered form elicitation on a revision that has it is ever
  // sent elicitation/create (broker/confirm/gate_config.h).
  client_elicits_ = m.params.is_object() &&
                    ClientTakesFormPrompt(m.params.value("capabilities", Json()), protocol_);
  OrderedJson result;
  result["protocolVersion"] = protocol_;
  result["capabilities"] = OrderedJson{{"tools", {{"listChanged", true}}},
                                       {"prompts", {{"listChanged", true}}},
                                       {"resources", {{"listChanged", true}}},
                                       {"extensions",
                                        {{kSkillsExtensionId, SkillsExtension::Capability()}}}};
  result["serverInfo"] = OrderedJson{{"name", kServerName}, {"version", version_}};
  result["instructions"] =
      "Agent Skills server. Call skill_list to see the skills and any problems, skill_load "
      "for a skill's instructions and file manifest, skill_file to read the files those "
      "instructions mention." +
      std::string(run_ != nullptr
                      ? " skill_run runs a script a skill declares, only after the user "
                        "confirms the exact preview."
                      : "");
  // Errors about messages with no usable id follow the negotiated revision (session.h).
  session_.SetOmitNullErrorId(protocol_ >= std::string("2025-11-25"));
  reply.Result(std::move(result));
}

void McpServer::CallTool(const RpcMessage& m, Reply reply) {
  auto name_it = m.params.find("name");
  if (!m.params.is_object() || name_it == m.params.end() || !name_it->is_string()) {
    reply.Error(rpc::kInvalidParams, "tools/call needs \"name\", a string");
    return;
  }
  const std::string name = name_it->get<std::string>();
  Json args = Json::object();
  if (auto a = m.params.find("arguments"); a != m.params.end() && !a->is_null()) {
    if (!a->is_object()) {
      reply.Result(ToMcpToolResult(ArgumentError("arguments", "tool arguments must be an object")));
      return;
    }
    args = *a;
  }
  // The result is moved, never copied: a skill_file body is megabytes.
  auto done = [reply](ToolResult r) { reply.ResultJson(ToolResultJson(std::move(r))); };
  if (name == "skill_list") return done(SkillList(view_));
  if (name == "skill_load") return done(SkillLoad(view_, args));
  if (name == "skill_file") return done(SkillFile(view_, args));
  if (name == "skill_run" && run_ != nullptr) {
    run_->Call(args, m.id, client_elicits_, done);
    return;
  }
  reply.Error(rpc::kInvalidParams, "unknown tool \"" + name + "\"; tools/list names the tools");
}

}  // namespace skillmcp
