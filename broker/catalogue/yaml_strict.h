// Strict YAML reading for SKILL.md frontmatter (docs/wire.md §5): the text is vetted as an
// event stream BEFORE any node tree is built, and YAML 1.2 core-schema types are resolved
// here rather than trusting yaml-cpp's lenient conversions (`yes` stays a string).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

namespace skillmcp {

// Why: yaml-cpp's parser recurses once per nesting level, so a frontmatter of 100000 `[`
// could exhaust the stack. The pre-scan refuses such text before yaml-cpp sees it.
inline constexpr int kMaxYamlNesting = 128;

struct YamlError {
  int line = 0;    // 1-based, within the text given; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
  std::string message;
};

// A conservative (over-)estimate of the text's nesting: indentation plus block indicators
// plus open flow brackets, ignoring quoted scalars, comments and block-scalar content.
// Returns the first line at which the estimate exceeds `max_depth`.
std::optional<YamlError> CheckNestingDepth(std::string_view text, int max_depth);

// Parses one YAML document strictly: nesting pre-scan, then an event-stream pass refusing
// anchors, aliases, merge keys (`<<`), explicit tags, non-scalar or duplicate mapping keys
// and a second document; only then builds the node tree. Never throws.
struct StrictYaml {
  bool ok = false;
  YAML::Node root;  // Null node for an empty document
  YamlError error;  // when !ok
};
StrictYaml LoadStrictYaml(std::string_view text);

// The YAML 1.2 core-schema type of a node (a plain scalar is resolved by the core
// schema's patterns; a quoted or block scalar is always a string).
enum class CoreType { kNull, kBool, kInt, kFloat, kString, kSequence, kMap, kUndefined };
CoreType ResolveCore(const YAML::Node& node);
const char* CoreTypeName(CoreType type);  // "a string", "a boolean", ...

// A plain int/float scalar as a number (core schema forms: 12, -3, 0x1F, 0o17, 1.5, .inf).
std::optional<double> CoreNumber(const YAML::Node& node);

// "line N, column M" (1-based) or "" when unknown; `line_offset` shifts into the file.
std::string DescribePosition(const YamlError& error, int line_offset);

}  // namespace skillmcp
