#include <algorithm>

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
    out["truncationNote"] =
        "SKILL.md is larger than " + std::to_string(kSkillMdCap) + " bytes; the body stops there.";
  }
  OrderedJson files = OrderedJson::array();
  for (const ManifestFile& f : s->files) {
    files.push_back(OrderedJson{{"path", f.path}, {"size", f.size}});
  }
  out["files"] = std::move(files);
  // The effective list: the declaration narrowed by the grant (nothing under the hosted
  // default or a grant that grants nothing); runnableHere says only whether its
  // interpreter runs here (docs/wire.md §2).
  OrderedJson scripts = OrderedJson::array();
  if (const SkillGrants* g = view.grants->Find(s->name)) {
    for (const SkillGrants::Declared& d : g->declared) {
      if (!d.granted) continue;
      const bool unavailable =
          std::any_of(g->unavailable.begin(), g->unavailable.end(),
                      [&d](const ScriptNote& n) { return n.script == d.run.script; });
      scripts.push_back(OrderedJson{{"script", d.run.script},
                                    {"interpreter", d.run.interpreter},
                                    {"runnableHere", !unavailable}});
    }
  }
  out["scripts"] = std::move(scripts);
  return ToolResult{std::move(out)};
}

}  // namespace skillmcp
