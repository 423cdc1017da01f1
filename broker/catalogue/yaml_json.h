// A strictly parsed YAML node rendered as JSON, for the skills extension's `frontmatter`
// (docs/wire.md §9): the author's keys in the author's order, scalars typed by
// the YAML 1.2 core schema (yaml_strict.h), so `description: yes` stays the string "yes".
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace skillmcp {

// nullopt when the node holds something JSON cannot carry (.inf, .nan).
std::optional<nlohmann::ordered_json> YamlToJson(const YAML::Node& node);

// The frontmatter text (between the fences) as JSON text, or nullopt when it does not
// parse strictly as a whole or holds a value JSON cannot carry.
std::optional<std::string> FrontmatterJsonText(std::string_view frontmatter);

// The same from the root LoadStrictYaml gave for the whole frontmatter (one parse).
std::optional<std::string> FrontmatterJson(const YAML::Node& root);

}  // namespace skillmcp
