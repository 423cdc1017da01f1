#include "broker/mcp/server.h"

#include "broker/confirm/gate_config.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/surfaces.h"
#include "broker/tools/tool_definitions.h"

namespace skillmcp {
namespace {

const Json& ParamsOf(const RpcMessage& m) {
  static const Json kEmpty = Json::object();
  return m.params.is_object() ? m.params : kEmpty;
}

// Methods the 2026-07-28 revision removed: a 2026 request for them is -32601.
bool RemovedIn2026(const std::string& method) { return method == "initialize" || method == "ping"; }

// The lists a client may be told have changed, in the order the notifications go.
constexpr const char* kLists[] = {"tools/list", "prompts/list", "resources/list"};

// What is answered without the catalogue: nothing in these answers depends on the skills.
bool ReadsCatalogue(const std::string& method) {
  return method != "ping" && method != "server/discover" && method != "tools/list" &&
         method != "resources/templates/list";
}

// {name, version} as the client sent them, into the connection's audit facts. Strings
// only; anything else leaves what was there.
void ReadClientInfo(const Json& info, AuditConnection* audit) {
  if (audit == nullptr || !info.is_object()) return;
  auto name = info.find("name");
  auto version = info.find("version");
  if (name != info.end() && name->is_string()) audit->client_name = name->get<std::string>();
  if (version != info.end() && version->is_string())
    audit->client_version = version->get<std::string>();
}

}  // namespace

McpServer::McpServer(Session& session, CatalogueView view, std::string version,
                     RunToolHandler* run)
    : session_(session), view_(view), version_(std::move(version)), run_(run), skills_ext_(view) {}

void McpServer::On(const std::string& method, Handler handler) {
  session_.OnRequest(method, [this, method, handler](const RpcMessage& m, Reply r) {
    Envelope e = ReadEnvelope(m.params);
    if (!Admit(method, e, r)) return;
    if (e.kind == Envelope::Kind::kModern && m.params.is_object()) {
      auto meta = m.params.find("_meta");
      if (meta != m.params.end() && meta->is_object()) {
        auto info = meta->find(std::string(kClientInfoKey));
        if (info != meta->end()) ReadClientInfo(*info, audit_);
      }
    }
    if (late_ != nullptr && ReadsCatalogue(method)) late_->Ensure();
    handler(m, r, e);
  });
}

// The era rules (docs/wire.md §8). Every refusal is an error answer to this request only;
// the connection and its era stay as they were.
bool McpServer::Admit(const std::string& method, const Envelope& e, Reply& reply) {
  using Kind = Envelope::Kind;
  switch (e.kind) {
    case Kind::kMalformed:
      reply.Error(rpc::kInvalidParams, e.problem);
      return false;
    case Kind::kUnsupported:
      reply.Error(rpc::kUnsupportedProtocolVersion,
                  "protocol version \"" + e.requested + "\" is not served over _meta; send \"" +
                      std::string(kModernRevision) +
                      "\", or use initialize for the 2025 revisions",
                  Json{{"supported", {std::string(kModernRevision)}}, {"requested", e.requested}});
      return false;
    case Kind::kNone:
      // Why: the revision requires the envelope on every request; a 2025 client never
      // sends server/discover, so nothing it sees changes.
      if (method == "server/discover") {
        reply.Error(rpc::kInvalidParams,
                    std::string("server/discover needs params._meta[\"") +
                        std::string(kProtocolVersionKey) + "\"] and [\"" +
                        std::string(kClientCapabilitiesKey) + "\"] (2026-07-28)");
        return false;
      }
      // Why: once a connection speaks 2026-07-28, a request without the envelope has no
      // revision to be served under; it is refused, not guessed to be 2025.
      if (era_ == Era::kModern) {
        reply.Error(RemovedIn2026(method) ? rpc::kMethodNotFound : rpc::kInvalidParams,
                    RemovedIn2026(method)
                        ? "\"" + method + "\" does not exist in 2026-07-28, which this "
                                          "connection speaks"
                        : std::string("this connection speaks 2026-07-28: every request needs "
                                      "params._meta[\"") +
                              std::string(kProtocolVersionKey) + "\"]");
        return false;
      }
      return true;
    case Kind::kModern:
      break;
  }
  // Why: a connection that negotiated a 2025 revision keeps it; its gate and capabilities
  // were fixed by initialize, and a request cannot switch them midway.
  if (era_ == Era::kLegacy) {
    reply.Error(rpc::kUnsupportedProtocolVersion,
                "this connection negotiated " + protocol_ +
                    " with initialize; 2026-07-28 requests need a connection of their own",
                Json{{"supported", {protocol_}}, {"requested", std::string(kModernRevision)}});
    return false;
  }
  if (RemovedIn2026(method)) {
    reply.Error(rpc::kMethodNotFound, "\"" + method + "\" does not exist in 2026-07-28");
    return false;
  }
  // server/discover is a probe: it fixes nothing, so a client may still fall back to
  // initialize on the same connection.
  if (method != "server/discover" && era_ != Era::kModern) {
    era_ = Era::kModern;
    // The 2026 schema, like 2025-11-25's, allows only a string or integer id (session.h).
    session_.SetOmitNullErrorId(true);
  }
  Json info = ServerInfo();
  reply.StampModern(ResultStampFields(WritesOwnResultType(method) ? "" : "complete",
                                      CacheTtlMs(method, lists_may_change_), info),
                    ResultStampFields("input_required", std::nullopt, info));
  return true;
}

void McpServer::Register() {
  session_.OnRequest("initialize", [this](const RpcMessage& m, Reply r) {
    Envelope e = ReadEnvelope(m.params);
    // Why: the revision, capabilities and gate are fixed once per connection; a second
    // initialize must not renegotiate them under requests already being served.
    if (e.kind == Envelope::Kind::kNone && era_ == Era::kLegacy) {
      return r.Error(rpc::kInvalidRequest, "this connection is already initialized (" + protocol_ +
                                               "); start a new connection to negotiate again");
    }
    if (e.kind == Envelope::Kind::kNone && era_ != Era::kModern) return Initialize(m, r);
    // Admit refuses every other case: initialize does not exist in 2026-07-28.
    Admit("initialize", e, r);
  });
  On("ping", [](const RpcMessage&, Reply r, const Envelope&) { r.ResultJson("{}"); });
  On("server/discover", [this](const RpcMessage&, Reply r, const Envelope&) { Discover(r); });
  // The lists are fixed while the catalogue is: serialised once (docs/performance.md).
  for (const char* list : kLists) {
    On(list,
       [this, list](const RpcMessage&, Reply r, const Envelope&) { r.ResultJson(ListText(list)); });
  }
  On("tools/call", [this](const RpcMessage& m, Reply r, const Envelope& e) { CallTool(m, r, e); });
  On("resources/templates/list", [](const RpcMessage&, Reply r, const Envelope&) {
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
  On("prompts/get", [this, answer](const RpcMessage& m, Reply r, const Envelope&) {
    answer(r, PromptsGet(view_, ParamsOf(m)));
  });
  On("resources/read", [this, answer](const RpcMessage& m, Reply r, const Envelope&) {
    answer(r, ResourcesRead(view_, ParamsOf(m)));
  });
  // The Skills over MCP extension (broker/tools/skills_ext.h).
  On("skills/list", [this, answer](const RpcMessage& m, Reply r, const Envelope&) {
    answer(r, skills_ext_.List(ParamsOf(m)));
  });
  On("skills/get", [this, answer](const RpcMessage& m, Reply r, const Envelope&) {
    answer(r, skills_ext_.Get(ParamsOf(m)));
  });
  On("resources/directory/read", [this, answer](const RpcMessage& m, Reply r, const Envelope&) {
    answer(r, skills_ext_.ReadDirectory(ParamsOf(m)));
  });
  session_.OnNotification("notifications/initialized",
                          [this](const RpcMessage&) { initialized_ = true; });
  session_.OnNotification("notifications/cancelled", [this](const RpcMessage& m) {
    if (!m.params.is_object() || !m.params.contains("requestId")) return;
    const Json& id = m.params["requestId"];
    if (run_ != nullptr) run_->Cancel(id);
    session_.CancelInFlight(id);
  });
}

const std::string& McpServer::ListText(const std::string& list) {
  return view_.cache->Get(list, [this, &list] {
    if (list == "tools/list") return DumpJson(ToolDefinitions(run_ != nullptr));
    if (list == "prompts/list") return DumpJson(PromptsList(view_));
    return DumpJson(ResourcesList(view_));
  });
}

int McpServer::SwapCatalogue(const std::function<void()>& swap) {
  std::vector<std::string> before;
  for (const char* list : kLists) before.push_back(ListText(list));
  swap();
  view_.cache->Clear();
  // Why only then: a 2025 client may be sent notifications once it has said initialized;
  // 2026-07-28 delivers list changes only on subscriptions/listen, not offered (§8).
  const bool tell = initialized_ && era_ == Era::kLegacy && lists_may_change_;
  int sent = 0;
  for (size_t i = 0; i < std::size(kLists); ++i) {
    if (ListText(kLists[i]) == before[i] || !tell) continue;
    const std::string list = kLists[i];
    OrderedJson note{
        {"jsonrpc", "2.0"},
        {"method", "notifications/" + list.substr(0, list.find('/')) + "/list_changed"}};
    session_.Send(note);
    ++sent;
  }
  return sent;
}

Json McpServer::ServerInfo() const { return Json{{"name", kServerName}, {"version", version_}}; }

std::string McpServer::Instructions() const {
  return "Agent Skills server. Call skill_list to see the skills and any problems, skill_load "
         "for a skill's instructions and file manifest, skill_file to read the files those "
         "instructions mention." +
         std::string(run_ != nullptr
                         ? " skill_run runs a script a skill declares, only after the user "
                           "confirms the exact preview."
                         : "");
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
  era_ = Era::kLegacy;
  if (m.params.is_object() && m.params.contains("clientInfo"))
    ReadClientInfo(m.params["clientInfo"], audit_);
  // Why: only a client that offered form elicitation on a revision that has it is ever
  // sent elicitation/create (broker/confirm/gate_config.h).
  client_elicits_ = m.params.is_object() &&
                    ClientTakesFormPrompt(m.params.value("capabilities", Json()), protocol_);
  OrderedJson result;
  result["protocolVersion"] = protocol_;
  // listChanged only where a list can change (SKILL_MCP_WATCH): a client that trusts it
  // re-reads on the notification, and one that sees none keeps what it read.
  const OrderedJson lists =
      lists_may_change_ ? OrderedJson{{"listChanged", true}} : OrderedJson::object();
  result["capabilities"] =
      OrderedJson{{"tools", lists},
                  {"prompts", lists},
                  {"resources", lists},
                  {"extensions", {{kSkillsExtensionId, SkillsExtension::Capability()}}}};
  result["serverInfo"] = OrderedJson{{"name", kServerName}, {"version", version_}};
  result["instructions"] = Instructions();
  // Errors about messages with no usable id follow the negotiated revision (session.h).
  session_.SetOmitNullErrorId(protocol_ >= std::string("2025-11-25"));
  session_.SetBatchesAccepted(protocol_ == std::string("2025-03-26"));
  reply.Result(std::move(result));
  if (late_ != nullptr) late_->Soon();
}

// server/discover (docs/wire.md §8): no listChanged, since 2026-07-28 delivers those only
// on subscriptions/listen, which this server does not offer.
void McpServer::Discover(Reply reply) {
  OrderedJson result;
  result["supportedVersions"] = OrderedJson::array({std::string(kModernRevision)});
  result["capabilities"] = OrderedJson{{"tools", OrderedJson::object()},
                                       {"prompts", OrderedJson::object()},
                                       {"resources", OrderedJson::object()},
                                       {"extensions",
                                        {{kSkillsExtensionId, SkillsExtension::Capability()}}}};
  result["instructions"] = Instructions();
  reply.Result(std::move(result));
  if (late_ != nullptr) late_->Soon();
}

void McpServer::CallTool(const RpcMessage& m, Reply reply, const Envelope& e) {
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
    if (e.kind != Envelope::Kind::kModern) {
      run_->Call(args, m.id, client_elicits_, done);
      return;
    }
    // 2026-07-28: no request ever goes to the client; the gate asks through an
    // input_required result instead (docs/wire.md §8).
    RoundCall round;
    round.client_elicits = ClientTakesFormPrompt(e.capabilities, kModernRevision);
    round.request_state = m.params.value("requestState", Json());
    round.input_responses = m.params.value("inputResponses", Json());
    run_->CallRound(args, m.id, round, done, [reply](OrderedJson body) {
      reply.InputRequired(body);
    });
    return;
  }
  reply.Error(rpc::kInvalidParams, "unknown tool \"" + name + "\"; tools/list names the tools");
}

}  // namespace skillmcp
