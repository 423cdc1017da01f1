// The skills extension's view of the catalogue: the Agent Skills name rule, frontmatter
// rendered as JSON, and which served skills skills/list leaves out (skills_ext_check.h).
#include "broker/catalogue/skills_ext_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "broker/catalogue/yaml_json.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::DumpProblems;
using testing::FindSkill;
using testing::HasProblem;
using testing::ProblemsWith;
using testing::Scan;
using testing::TempTree;

// The skill `name` is left out of skills/list for `reason`; the reason stays out of the
// catalogue's problems (the reference's array).
bool Omitted(const Catalogue& cat, const std::string& name, const char* reason) {
  for (const Problem& p : cat.problems) {
    if (p.reason.rfind("skills-ext-", 0) == 0) return false;
  }
  const Skill* s = FindSkill(cat, name);
  return s != nullptr && s->skills_ext_omission && s->skills_ext_omission->reason == reason;
}

TEST(AgentSkillsName, FollowsTheRule) {
  for (const char* ok : {"a", "pdf-processing", "x1-2y", "0"}) {
    EXPECT_TRUE(IsAgentSkillsName(ok)) << ok;
  }
  EXPECT_TRUE(IsAgentSkillsName(std::string(64, 'a')));
  EXPECT_FALSE(IsAgentSkillsName(std::string(65, 'a')));
  for (const char* bad : {"", "-a", "a-", "a--b", "Pdf", "a_b", "a.b", "a b", "\xc3\xa9"}) {
    EXPECT_FALSE(IsAgentSkillsName(bad)) << bad;
  }
}

TEST(FrontmatterJson, KeepsOrderAndCoreSchemaTypes) {
  auto text = FrontmatterJsonText(
      "name: x\ndescription: yes\ncount: 0x1F\nratio: 1.5\nflag: true\nnone: ~\n"
      "metadata:\n  version: \"2.1\"\n  tags: [a, 2]\n");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, R"({"name":"x","description":"yes","count":31,"ratio":1.5,"flag":true,)"
                   R"("none":null,"metadata":{"version":"2.1","tags":["a",2]}})");
}

TEST(FrontmatterJson, RefusesWhatJsonCannotCarry) {
  EXPECT_FALSE(FrontmatterJsonText("name: x\nlimit: .inf\n"));
  EXPECT_FALSE(FrontmatterJsonText("- a\n- b\n"));        // not a mapping
  EXPECT_FALSE(FrontmatterJsonText("a: &x 1\nb: *x\n"));  // strictness as everywhere
}

TEST(SkillsExtCheck, ConformingSkillIsListedWithoutProblems) {
  TempTree t;
  t.Skill("good-one", "good-one", "license: MIT\n");
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "good-one");
  ASSERT_NE(s, nullptr) << DumpProblems(cat);
  EXPECT_FALSE(s->skills_ext_omission.has_value());
  EXPECT_TRUE(s->files_complete);  // a walk that finished
  EXPECT_TRUE(cat.problems.empty()) << DumpProblems(cat);
  auto fm = nlohmann::json::parse(s->frontmatter_json);
  EXPECT_EQ(fm["license"], "MIT");
  EXPECT_EQ(fm["name"], "good-one");
}

TEST(SkillsExtCheck, NameMismatchIsLeftOutButServed) {
  TempTree t;
  t.Skill("dir-name", "other-name");
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "dir-name");
  ASSERT_NE(s, nullptr);  // the tools still serve it
  EXPECT_TRUE(s->skills_ext_omission.has_value());
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("dir-name")));
  ASSERT_TRUE(Omitted(cat, "dir-name", reason::kSkillsExtName)) << DumpProblems(cat);
  EXPECT_NE(FindSkill(cat, "dir-name")->skills_ext_omission->detail.find("other-name"),
            std::string::npos);
}

TEST(SkillsExtCheck, NameBreakingTheRuleIsLeftOut) {
  TempTree t;
  t.Skill("Upper_Case", "Upper_Case");
  Catalogue cat = Scan(t.root());
  ASSERT_NE(FindSkill(cat, "Upper_Case"), nullptr);
  EXPECT_TRUE(FindSkill(cat, "Upper_Case")->skills_ext_omission.has_value());
  EXPECT_TRUE(Omitted(cat, "Upper_Case", reason::kSkillsExtName)) << DumpProblems(cat);
  EXPECT_FALSE(HasProblem(cat, reason::kNameMismatch, t.Path("Upper_Case")));
}

TEST(SkillsExtCheck, MissingDescriptionIsLeftOut) {
  TempTree t;
  t.Write("nodesc/SKILL.md", "---\nname: nodesc\n---\nbody\n");
  Catalogue cat = Scan(t.root());
  ASSERT_NE(FindSkill(cat, "nodesc"), nullptr);
  EXPECT_TRUE(Omitted(cat, "nodesc", reason::kSkillsExtFrontmatter)) << DumpProblems(cat);
}

TEST(SkillsExtCheck, RefusedDeclarationBlockMeansNoVerbatimFrontmatter) {
  TempTree t;
  // The anchor costs only the mcp-host block for the tools, but the frontmatter as a
  // whole cannot be rendered verbatim.
  t.Skill("anchored", "anchored", "mcp-host: &a\n  version: 1\n");
  Catalogue cat = Scan(t.root());
  ASSERT_NE(FindSkill(cat, "anchored"), nullptr) << DumpProblems(cat);
  EXPECT_TRUE(Omitted(cat, "anchored", reason::kSkillsExtFrontmatter)) << DumpProblems(cat);
}

TEST(SkillsExtCheck, OverTheResourceLimitIsLeftOut) {
  TempTree t;
  t.Skill("many", "many");
  for (size_t i = 0; i < kExtMaxResources; ++i) t.Write("many/f/" + std::to_string(i), "x");
  t.Skill("fits", "fits");
  for (size_t i = 0; i + 1 < kExtMaxResources; ++i) t.Write("fits/f/" + std::to_string(i), "x");
  Catalogue cat = Scan(t.root());
  ASSERT_EQ(FindSkill(cat, "fits")->files.size(), kExtMaxResources);
  EXPECT_FALSE(FindSkill(cat, "fits")->skills_ext_omission.has_value()) << DumpProblems(cat);
  EXPECT_TRUE(FindSkill(cat, "many")->skills_ext_omission.has_value());
  EXPECT_TRUE(Omitted(cat, "many", reason::kSkillsExtLimit)) << DumpProblems(cat);
}

TEST(SkillsExtCheck, AFileOverOneMibIsLeftOut) {
  TempTree t;
  t.Skill("big", "big");
  t.Write("big/data.bin", std::string(kExtMaxFileBytes + 1, 'b'));
  t.Skill("edge", "edge");
  t.Write("edge/data.bin", std::string(kExtMaxFileBytes, 'b'));
  Catalogue cat = Scan(t.root());
  EXPECT_TRUE(Omitted(cat, "big", reason::kSkillsExtLimit)) << DumpProblems(cat);
  EXPECT_FALSE(FindSkill(cat, "edge")->skills_ext_omission.has_value()) << DumpProblems(cat);
}

TEST(SkillsExtCheck, OverSixteenMibInAllIsLeftOut) {
  TempTree t;
  t.Skill("heavy", "heavy");
  for (int i = 0; i < 17; ++i) t.Write("heavy/" + std::to_string(i), std::string(1 << 20, 'h'));
  Catalogue cat = Scan(t.root());
  ASSERT_TRUE(Omitted(cat, "heavy", reason::kSkillsExtLimit)) << DumpProblems(cat);
  EXPECT_NE(FindSkill(cat, "heavy")->skills_ext_omission->detail.find("16 MiB"), std::string::npos);
}

TEST(SkillsExtCheck, AStoppedWalkIsLeftOutButServed) {
  TempTree t;
  // Few files but more directories than the walk takes: it stops before zz-later.txt,
  // so the manifest (and any entry) would miss a file of the bundle.
  t.Skill("walled", "walled");
  for (size_t i = 0; i <= kMaxDirsPerSkill; ++i) t.Mkdir("walled/d" + std::to_string(i));
  t.Write("walled/zz-later.txt", "walked after the directories\n");
  Catalogue cat = Scan(t.root());

  const Skill* walled = FindSkill(cat, "walled");
  ASSERT_NE(walled, nullptr) << DumpProblems(cat);  // the tools still serve it
  ASSERT_TRUE(HasProblem(cat, reason::kFileLimit, t.Path("walled"))) << DumpProblems(cat);
  EXPECT_FALSE(walled->files_complete);
  EXPECT_EQ(walled->files.size(), 1u);  // SKILL.md only: not left out for its size
  EXPECT_TRUE(walled->skills_ext_omission.has_value());
  ASSERT_TRUE(Omitted(cat, "walled", reason::kSkillsExtLimit)) << DumpProblems(cat);
  const std::string detail = walled->skills_ext_omission->detail;
  EXPECT_NE(detail.find("file-limit"), std::string::npos) << detail;
  EXPECT_NE(detail.find("skills/list leaves it out, the tools still serve it"), std::string::npos)
      << detail;
}

}  // namespace
}  // namespace skillmcp
