#include "broker/tools/read_tools.h"
#include "broker/tools/tool_args.h"

namespace skillmcp {

ToolResult SkillLoad(const CatalogueView& view, const Json& args) {
  std::string name;
  if (auto err = RequireString(args, "name", &name)) return *err;
  const Skill* s = view.FindSkill(name);
  if (s == nullptr) return UnknownSkill(view, name);
  OrderedJson out;
  out["name"] = s->name;
  if (s->description) out["description"] = *s->description;
  if (s->when_to_use) out["whenToUse"] = *s->when_to_use;
  out["source"] = s->root;  // the root it was found under, as skill_list says
  out["body"] = s->body;
  out["truncated"] = s->body_truncated;
  if (s->body_truncated) {
    out["truncationNote"] = "SKILL.md is larger than " + std::to_string(kSkillMdCap) +
                            " bytes; the body stops there.";
  }
  OrderedJson files = OrderedJson::array();
  for (const ManifestFile& f : s->files) {
    files.push_back(OrderedJson{{"path", f.path}, {"size", f.size}});
  }
  out["files"] = std::move(files);
  OrderedJson scripts = OrderedJson::array();
  ScriptLookup lookup;
  for (const DeclaredRun& run : s->runs) {
    lookup = view.grants->Lookup(s->name, run.script);
    scripts.push_back(OrderedJson{{"script", run.script},
                                  {"interpreter", run.interpreter},
                                  {"runnableHere", lookup.refusal == ScriptRefusal::kNone}});
  }
  out["scripts"] = std::move(scripts);
  return ToolResult{std::move(out)};
}

}  // namespace skillmcp
