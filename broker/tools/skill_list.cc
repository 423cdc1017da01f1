#include "broker/grants/grant_json.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/read_tools.h"
#include "shared/json_escape.h"

namespace skillmcp {
namespace {

OrderedJson ProblemJson(const Problem& p) {
  OrderedJson j;
  j["path"] = p.path;
  j["reason"] = p.reason;
  j["detail"] = p.detail;
  return j;
}

OrderedJson SkillListPayload(const CatalogueView& view) {
  const Catalogue& cat = *view.catalogue;
  OrderedJson out;
  out["roots"] = cat.roots;
  out["rootsFrom"] = cat.roots_from;
  AppendCatalogueGrantFields(out, *view.grants);
  OrderedJson skills = OrderedJson::array();
  for (const Skill& s : cat.skills) {
    OrderedJson e;
    e["name"] = s.name;
    if (s.description) e["description"] = *s.description;
    if (s.when_to_use) e["whenToUse"] = *s.when_to_use;
    e["source"] = s.root;  // the root it was found under (docs/wire.md §2)
    e["files"] = s.files.size();
    e["bytes"] = s.bytes;
    if (const SkillGrants* g = view.grants->Find(s.name)) {
      AppendSkillGrantFields(e, *g);
    }
    if (!s.declared_egress.empty()) e["declaredEgress"] = s.declared_egress;
    skills.push_back(std::move(e));
  }
  out["skills"] = std::move(skills);
  OrderedJson problems = OrderedJson::array();
  for (const Problem& p : cat.problems) problems.push_back(ProblemJson(p));
  for (const Problem& p : view.grants->problems) problems.push_back(ProblemJson(p));
  out["problems"] = std::move(problems);
  // Ours, beside the reference's fields: which served skills the Skills over MCP extension
  // leaves out of skills/list, and why (docs/wire.md §9). Never in `problems`.
  OrderedJson omitted = OrderedJson::array();
  for (const Skill& s : cat.skills) {
    if (!s.skills_ext_omission) continue;
    omitted.push_back(OrderedJson{{"name", s.name},
                                  {"reason", s.skills_ext_omission->reason},
                                  {"detail", s.skills_ext_omission->detail}});
  }
  out["skillsExtension"] = OrderedJson{{"omitted", std::move(omitted)}};
  return out;
}

}  // namespace

// Built once: the catalogue and the grants are fixed after boot (docs/performance.md).
ToolResult SkillList(const CatalogueView& view) {
  ToolResult r;
  r.text = view.cache->Get("skill_list", [&view] {
    std::string text;
    AppendJsonEscaped(&text, DumpJson(SkillListPayload(view)), 1);
    return text;
  });
  return r;
}

}  // namespace skillmcp
