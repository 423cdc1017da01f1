#include "broker/tools/tool_args.h"

namespace skillmcp {

std::optional<ToolResult> RequireString(const Json& args, const char* key, std::string* out) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) {
    return ArgumentError(key, std::string("\"") + key + "\" is required (a string)");
  }
  if (!it->is_string()) {
    return ArgumentError(key, std::string("\"") + key + "\" must be a string, not " +
                                  it->type_name());
  }
  *out = it->get<std::string>();
  if (out->empty()) {
    return ArgumentError(key, std::string("\"") + key + "\" must not be empty");
  }
  return std::nullopt;
}

std::optional<ToolResult> OptionalString(const Json& args, const char* key,
                                         std::optional<std::string>* out) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    return ArgumentError(key, std::string("\"") + key + "\" must be a string, not " +
                                  it->type_name());
  }
  *out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ToolResult> StringArray(const Json& args, const char* key, bool required,
                                      size_t min_items, size_t max_items,
                                      std::vector<std::string>* out) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) {
    if (!required) return std::nullopt;
    return ArgumentError(key, std::string("\"") + key + "\" is required (an array of strings)");
  }
  if (!it->is_array()) {
    return ArgumentError(key, std::string("\"") + key + "\" must be an array of strings, not " +
                                  it->type_name());
  }
  if (it->size() < min_items || it->size() > max_items) {
    return ArgumentError(key, std::string("\"") + key + "\" takes " +
                                  std::to_string(min_items) + " to " +
                                  std::to_string(max_items) + " items; it has " +
                                  std::to_string(it->size()));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    if (!item.is_string()) {
      return ArgumentError(key, std::string("\"") + key + "[" + std::to_string(i) +
                                    "]\" must be a string, not " + item.type_name());
    }
    out->push_back(item.get<std::string>());
  }
  return std::nullopt;
}

}  // namespace skillmcp
