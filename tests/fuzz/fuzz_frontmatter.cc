// libFuzzer entry point over the SKILL.md parser: fence split, strict YAML (nesting
// pre-scan, event-stream checks), core-schema resolution, the mcp-host declaration and the
// frontmatter rendered as JSON for the skills extension (yaml_json.h).
// It must never crash, hang or recurse without bound, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/yaml_json.h"
#include "broker/catalogue/skill.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > skillmcp::kSkillMdCap) return 0;  // the scan never reads more than this
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // Both truncation modes: the flag only changes how the body's tail is cut.
  skillmcp::ParsedSkillMd parsed = skillmcp::ParseSkillMd(text, (size & 1) != 0);
  if (parsed.servable && parsed.body.size() > size) __builtin_trap();
  if (!parsed.servable && parsed.issues.empty()) __builtin_trap();  // never silent
  if (!parsed.declaration.ok && !parsed.declaration.runs.empty()) __builtin_trap();
  if (parsed.servable) {
    // What the scan stores for skills/list: JSON text of an object, or nothing.
    auto json = skillmcp::FrontmatterJsonText(skillmcp::SplitSkillMd(text).frontmatter);
    if (json && (json->empty() || json->front() != '{')) __builtin_trap();
  }
  return 0;
}
