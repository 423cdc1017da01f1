// libFuzzer entry point for MCP_SKILL_RUN (a trust boundary: hand-written JSON read at
// boot). Whatever the bytes, ParseSkillRunGrant must return (never throw, crash or hang),
// and a refusal must grant nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "broker/grants/grant_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  skillmcp::GrantParseResult result = skillmcp::ParseSkillRunGrant(text);
  if (!result.ok && (!result.rows.empty() || result.error.empty())) std::abort();
  if (result.ok && !result.error.empty()) std::abort();
  return 0;
}
