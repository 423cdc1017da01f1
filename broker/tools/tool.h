// What every tool handler shares: its result shape and the read-only view of the catalogue.
#pragma once

#include <functional>
#include <map>
#include <memory>
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
  // When not empty: the payload already serialised and escaped as the inside of a JSON
  // string (JsonWriter, levels 2), and `payload` is unused. The bulk answers take this
  // form so their bytes are written once (docs/performance.md).
  std::string text;
  bool is_error = false;
  bool indented = false;  // confirmation payloads are 2-space indented (docs/wire.md)
  bool show_hidden = false;  // invisible characters written as JSON \uXXXX escapes
};

using ToolDone = std::function<void(ToolResult)>;

// {content: [{type: "text", text: <payload JSON>}], isError?: true}
OrderedJson ToMcpToolResult(const ToolResult& result);
// Minified JSON text in three parts, head + body + tail, so a multi-MiB body is queued for
// writing as it is, never copied to join the parts.
struct JsonParts {
  std::string head, body, tail;
};
// The same object as minified JSON text, byte for byte what dumping ToMcpToolResult gives;
// the body is the result's text, moved.
JsonParts ToolResultJson(ToolResult result);
// The payload's JSON text (the "text" of the content block), for tests and logs.
std::string ToolResultText(const ToolResult& result);

// Answers that do not change while the catalogue stays the same, kept as serialised JSON
// and built on first use; emptied when a live catalogue is replaced.
class AnswerCache {
 public:
  template <typename Build>
  const std::string& Get(const std::string& key, Build build) {
    auto it = answers_.find(key);
    if (it == answers_.end()) it = answers_.emplace(key, build()).first;
    return it->second;
  }
  void Clear() { answers_.clear(); }

 private:
  std::map<std::string, std::string> answers_;
};

// An isError result naming the argument at fault.
ToolResult ArgumentError(std::string_view argument, std::string_view message);
// An isError result for a refusal that is not about argument shapes.
ToolResult Refusal(std::string_view error, std::string_view message);

// The catalogue as the tools see it. The pointed-to catalogue and grants are replaced in
// place, on the loop, when the live catalogue rescans (docs/wire.md §10).
struct CatalogueView {
  const Catalogue* catalogue = nullptr;
  const GrantDecision* grants = nullptr;
  // Shared by the copies of one view: it lives as long as the catalogue it describes.
  std::shared_ptr<AnswerCache> cache = std::make_shared<AnswerCache>();

  const Skill* FindSkill(std::string_view name) const;
};

// The asynchronous skill_run tool, when the run side is available.
// One 2026-07-28 tools/call (docs/wire.md §8): what the request declared and carried for
// a Multi Round-Trip Request.
struct RoundCall {
  bool client_elicits = false;  // its clientCapabilities offer form elicitation
  Json request_state;           // params.requestState as sent; null when absent
  Json input_responses;         // params.inputResponses as sent; null when absent
};
// Answers the call with an input_required result whose body is {inputRequests, requestState}.
using AskDone = std::function<void(OrderedJson body)>;

class RunToolHandler {
 public:
  virtual ~RunToolHandler() = default;
  // `client_elicits`: the client declared the elicitation capability.
  virtual void Call(const Json& args, const Json& request_id, bool client_elicits,
                    ToolDone done) = 0;
  // The same call under 2026-07-28, where no request goes to the client: a prompt is an
  // input_required answer (`ask`), and the retry carries the user's answer. Pure, so that
  // a wrapper (DeferredRunTool) cannot silently send 2026 calls down another path.
  virtual void CallRound(const Json& args, const Json& request_id, const RoundCall& round,
                         ToolDone done, AskDone ask) = 0;
  // notifications/cancelled for a request this handler is serving.
  virtual void Cancel(const Json& request_id) = 0;
};

// A refusal for a skill name the catalogue does not serve.
ToolResult UnknownSkill(const CatalogueView& view, std::string_view name);

}  // namespace skillmcp
