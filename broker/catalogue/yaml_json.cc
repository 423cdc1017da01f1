#include "broker/catalogue/yaml_json.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "broker/catalogue/yaml_strict.h"

namespace skillmcp {
namespace {

using OrderedJson = nlohmann::ordered_json;

// An integer scalar stays an integer while a double holds it exactly (|x| <= 2^53).
std::optional<OrderedJson> Number(const YAML::Node& node, bool integer) {
  std::optional<double> v = CoreNumber(node);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  if (integer && std::fabs(*v) <= 9007199254740992.0) return OrderedJson(static_cast<int64_t>(*v));
  return OrderedJson(*v);
}

}  // namespace

std::optional<nlohmann::ordered_json> YamlToJson(const YAML::Node& node) {
  switch (ResolveCore(node)) {
    case CoreType::kNull:
    case CoreType::kUndefined:
      return OrderedJson(nullptr);
    case CoreType::kBool: {
      const std::string& s = node.Scalar();
      return OrderedJson(s == "true" || s == "True" || s == "TRUE");
    }
    case CoreType::kInt:
      return Number(node, true);
    case CoreType::kFloat:
      return Number(node, false);
    case CoreType::kString:
      return OrderedJson(node.Scalar());
    case CoreType::kSequence: {
      OrderedJson out = OrderedJson::array();
      for (const auto& item : node) {
        auto v = YamlToJson(item);
        if (!v) return std::nullopt;
        out.push_back(std::move(*v));
      }
      return out;
    }
    case CoreType::kMap: {
      OrderedJson out = OrderedJson::object();
      for (const auto& kv : node) {
        auto v = YamlToJson(kv.second);
        if (!v) return std::nullopt;
        out[kv.first.Scalar()] = std::move(*v);
      }
      return out;
    }
  }
  return std::nullopt;
}

std::optional<std::string> FrontmatterJsonText(std::string_view frontmatter) {
  StrictYaml yaml = LoadStrictYaml(frontmatter);
  if (!yaml.ok) return std::nullopt;
  return FrontmatterJson(yaml.root);
}

std::optional<std::string> FrontmatterJson(const YAML::Node& root) {
  std::optional<OrderedJson> json = YamlToJson(root);
  if (!json || !json->is_object()) return std::nullopt;
  // Why: the checked frontmatter is UTF-8 (frontmatter.h); replace rather than throw if not.
  return json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace skillmcp
