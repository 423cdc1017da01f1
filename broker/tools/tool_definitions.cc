#include "broker/tools/tool_definitions.h"

#include <string>

#include "broker/tools/file_reader.h"
#include "broker/tools/skill_run.h"

namespace skillmcp {
namespace {

using OJ = nlohmann::ordered_json;

OJ ReadAnnotations(const char* title) {
  return OJ{{"title", title},
            {"readOnlyHint", true},
            {"idempotentHint", true},
            {"openWorldHint", false}};
}

OJ StringProp(const char* description, bool min1) {
  OJ p{{"type", "string"}, {"description", description}};
  if (min1) p["minLength"] = 1;
  return p;
}

// The JSON Schema dialect every input schema names, in the reference's key order
// (type, $schema, properties, required), so a validating client picks the right draft.
constexpr const char* kSchemaDialect = "https://json-schema.org/draft/2020-12/schema";

OJ Tool(const char* name, const char* title, const std::string& description, OJ properties,
        OJ required, OJ annotations) {
  OJ schema{{"type", "object"}, {"$schema", kSchemaDialect}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  return OJ{{"name", name},
            {"title", title},
            {"description", description},
            {"inputSchema", std::move(schema)},
            {"annotations", std::move(annotations)}};
}

}  // namespace

OJ ToolDefinitions(bool with_run) {
  OJ tools = OJ::array();
  tools.push_back(Tool(
      "skill_list", "List skills",
      "Lists every skill this server serves: name, description, when to use it, file count, "
      "which declared scripts may run here, and `problems` explaining anything that could "
      "not be served.",
      OJ::object(), OJ::array(), ReadAnnotations("List skills")));
  tools.push_back(Tool(
      "skill_load", "Load a skill",
      "Returns a skill's SKILL.md instructions verbatim and the manifest of its bundled "
      "files. Fetch the files the instructions mention with skill_file.",
      OJ{{"name", StringProp("Skill name, as skill_list shows it", true)}}, OJ{"name"},
      ReadAnnotations("Load a skill")));
  // The item schema carries its own bound and description, as the reference publishes it,
  // so a validating client refuses an empty path before the call.
  OJ paths{{"type", "array"},
           {"items", StringProp("Path relative to the skill directory", true)},
           {"minItems", 1},
           {"maxItems", kMaxPathsPerCall},
           {"description", "Paths relative to the skill directory, as skill_load lists them"}};
  tools.push_back(Tool(
      "skill_file", "Read skill files",
      "Reads up to " + std::to_string(kMaxPathsPerCall) +
          " files from one skill's bundle in one call: text as UTF-8, anything else as "
          "base64 with a media type. " +
          std::to_string(kFileEntryCap >> 20) +
          " MiB per file (larger files come back truncated, with their real size), " +
          std::to_string(kFileCallBudget >> 20) + " MiB per call.",
      OJ{{"name", StringProp("Skill name, as skill_list shows it", true)}, {"paths", paths}},
      OJ{"name", "paths"}, ReadAnnotations("Read skill files")));
  if (with_run) {
    OJ args{{"type", "array"},
            {"items", {{"type", "string"}}},
            {"maxItems", kMaxRunArgs},
            {"description", "Arguments passed to the script verbatim (no shell)"}};
    tools.push_back(Tool(
        "skill_run", "Run a skill script",
        "Runs one of the scripts the skill declares (skill_list and skill_load name them), "
        "after the user confirms. "
        "The first call returns a preview of exactly what would run and a confirmToken "
        "(or asks the user directly when the client supports it); call again with the same "
        "arguments and that token to run it once. Returns exit code, stdout, stderr.",
        OJ{{"name", StringProp("Skill name, as skill_list shows it", true)},
           {"script", StringProp("Declared script path, as skill_list shows it", true)},
           {"args", args},
           {"confirmToken", StringProp("Token from the preview of this exact run", false)}},
        OJ{"name", "script"},
        OJ{{"title", "Run a skill script"},
           {"readOnlyHint", false},
           {"destructiveHint", true},
           {"idempotentHint", false},
           {"openWorldHint", true}}));
  }
  return OJ{{"tools", std::move(tools)}};
}

}  // namespace skillmcp
