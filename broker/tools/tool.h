// What every tool handler shares: its result shape and the read-only view of the catalogue.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "broker/catalogue/skill.h"
#include "broker/grants/grants.h"

namespace skillmcp {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

struct ToolResult {
  OrderedJson payload;
  bool is_error = false;
  bool indented = false;  // confirmation payloads are 2-space indented (docs/wire.md)
  bool show_hidden = false;  // invisible characters written as JSON \uXXXX escapes
};

using ToolDone = std::function<void(ToolResult)>;

// {content: [{type: "text", text: <payload JSON>}], isError?: true}
OrderedJson ToMcpToolResult(const ToolResult& result);

// An isError result naming the argument at fault.
ToolResult ArgumentError(std::string_view argument, std::string_view message);
// An isError result for a refusal that is not about argument shapes.
ToolResult Refusal(std::string_view error, std::string_view message);

// The catalogue as the tools see it, fixed after boot.
struct CatalogueView {
  const Catalogue* catalogue = nullptr;
  const GrantDecision* grants = nullptr;

  const Skill* FindSkill(std::string_view name) const;
};

// The asynchronous skill_run tool, when the run side is available.
class RunToolHandler {
 public:
  virtual ~RunToolHandler() = default;
  // `client_elicits`: the client declared the elicitation capability.
  virtual void Call(const Json& args, const Json& request_id, bool client_elicits,
                    ToolDone done) = 0;
  // notifications/cancelled for a request this handler is serving.
  virtual void Cancel(const Json& request_id) = 0;
};

// A refusal for a skill name the catalogue does not serve.
ToolResult UnknownSkill(const CatalogueView& view, std::string_view name);

}  // namespace skillmcp
