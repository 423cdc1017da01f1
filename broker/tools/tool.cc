#include "broker/tools/tool.h"

#include "broker/confirm/shown_text.h"
#include "broker/tools/json_writer.h"
#include "shared/json_escape.h"

namespace skillmcp {

std::string ToolResultText(const ToolResult& result) {
  if (!result.text.empty()) {
    return Json::parse("\"" + result.text + "\"").get<std::string>();
  }
  std::string text = result.payload.dump(result.indented ? 2 : -1, ' ', false,
                                         OrderedJson::error_handler_t::replace);
  // Same values for a parser; bidi, zero-width and separator characters made visible.
  return result.show_hidden ? EscapeHiddenInJson(text) : text;
}

JsonParts ToolResultJson(ToolResult result) {
  JsonParts out;
  out.head = R"({"content":[{"type":"text","text":")";
  if (!result.text.empty()) {
    out.body = std::move(result.text);
  } else {
    // The text is nlohmann's own output (replace handler) or its hidden-character
    // rewrite, so it is valid UTF-8 and one escaping pass gives the dump's bytes.
    AppendJsonEscaped(&out.body, ToolResultText(result), 1);
  }
  out.tail = result.is_error ? R"("}],"isError":true})" : R"("}]})";
  return out;
}

OrderedJson ToMcpToolResult(const ToolResult& result) {
  OrderedJson block;
  block["type"] = "text";
  block["text"] = ToolResultText(result);
  OrderedJson out;
  out["content"] = OrderedJson::array({block});
  if (result.is_error) out["isError"] = true;
  return out;
}

ToolResult ArgumentError(std::string_view argument, std::string_view message) {
  ToolResult r;
  r.is_error = true;
  r.payload["error"] = "INVALID_ARGUMENT";
  r.payload["argument"] = std::string(argument);
  r.payload["message"] = std::string(message);
  return r;
}

ToolResult Refusal(std::string_view error, std::string_view message) {
  ToolResult r;
  r.is_error = true;
  r.payload["error"] = std::string(error);
  r.payload["message"] = std::string(message);
  return r;
}

const Skill* CatalogueView::FindSkill(std::string_view name) const {
  for (const Skill& s : catalogue->skills) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

ToolResult UnknownSkill(const CatalogueView& view, std::string_view name) {
  std::string known;
  for (const Skill& s : view.catalogue->skills) {
    if (!known.empty()) known += ", ";
    known += s.name;
  }
  return Refusal("UNKNOWN_SKILL",
                 "no skill named \"" + std::string(name) + "\" is served here" +
                     (known.empty() ? std::string("; skill_list shows none (see its problems)")
                                    : "; skill_list shows the served skills: " + known));
}

}  // namespace skillmcp
