// libFuzzer entry point for skill:// resource URIs (resources/read) and prompt names
// (prompts/get): the input is the `uri` / `name` string as the JSON parser hands it over
// (valid UTF-8, NUL allowed). Every answer is an error with a message or a result that
// serialises, and a result only ever carries a file listed in the skill's manifest.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "broker/mcp/jsonrpc.h"
#include "broker/tools/surfaces.h"
#include "shared/utf8.h"
#include "tests/fuzz/rig.h"

namespace {

using namespace skillmcp;

void Emit(const SurfaceAnswer& a) {
  if (a.error_code != 0) {
    if (a.error_message.empty()) __builtin_trap();
    (void)SerializeLine(MakeError(Json(1), a.error_code, a.error_message));
  } else {
    (void)SerializeLine(MakeResult(Json(1), a.result));
  }
}

bool InManifest(const Skill& skill, std::string_view path) {
  for (const ManifestFile& f : skill.files) {
    if (f.path == path) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 100000) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!IsValidUtf8(text)) return 0;  // a JSON string never carries anything else
  const fuzz::Rig& rig = fuzz::GetRig();
  SurfaceAnswer read = ResourcesRead(rig.view(), Json{{"uri", text}});
  Emit(read);
  if (read.error_code == 0) {
    // Why: a resource is only ever a file of the skill, reached beneath its directory.
    const std::string prefix = std::string(kResourceScheme) + fuzz::kSkillName + "/";
    if (text.rfind(prefix, 0) != 0) __builtin_trap();
    if (!InManifest(rig.catalogue.skills[0], std::string_view(text).substr(prefix.size()))) {
      __builtin_trap();
    }
  }
  Emit(PromptsGet(rig.view(), Json{{"name", text}}));
  return 0;
}
