// libFuzzer entry point for the strict YAML pass on its own (broker/catalogue/yaml_strict.*),
// without the SKILL.md fences around it: nesting pre-scan, event-stream checks, node tree,
// then the core-schema resolution of every node. Never throws, crashes or recurses without
// bound; a refusal always says why, and accepted text always passed the nesting pre-scan.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "broker/catalogue/skill.h"
#include "broker/catalogue/yaml_strict.h"

namespace {

void Walk(const YAML::Node& node, int depth) {
  if (depth > skillmcp::kMaxYamlNesting + 2) __builtin_trap();
  skillmcp::CoreType type = skillmcp::ResolveCore(node);
  (void)skillmcp::CoreTypeName(type);
  if (type == skillmcp::CoreType::kInt || type == skillmcp::CoreType::kFloat) {
    if (!skillmcp::CoreNumber(node)) __builtin_trap();  // a number the schema says it is
  }
  if (node.IsSequence()) {
    for (const YAML::Node& child : node) Walk(child, depth + 1);
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      Walk(kv.first, depth + 1);
      Walk(kv.second, depth + 1);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > skillmcp::kSkillMdCap) return 0;  // the frontmatter is never longer
  std::string_view text(reinterpret_cast<const char*>(data), size);
  skillmcp::StrictYaml parsed = skillmcp::LoadStrictYaml(text);
  if (!parsed.ok) {
    if (parsed.error.message.empty()) __builtin_trap();
    (void)skillmcp::DescribePosition(parsed.error, 1);
    return 0;
  }
  if (skillmcp::CheckNestingDepth(text, skillmcp::kMaxYamlNesting)) __builtin_trap();
  Walk(parsed.root, 0);
  return 0;
}
