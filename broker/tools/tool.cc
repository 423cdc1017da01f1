#include "broker/tools/tool.h"

#include "broker/confirm/shown_text.h"

namespace skillmcp {

OrderedJson ToMcpToolResult(const ToolResult& result) {
  OrderedJson block;
  block["type"] = "text";
  std::string text = result.payload.dump(result.indented ? 2 : -1, ' ', false,
                                         OrderedJson::error_handler_t::replace);
  // Same values for a parser; bidi, zero-width and separator characters made visible.
  block["text"] = result.show_hidden ? EscapeHiddenInJson(text) : std::move(text);
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
