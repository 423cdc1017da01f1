// Discovery and declarations as the TypeScript skill-mcp does them (docs/wire.md §1
// and docs/configuration.md): source, body, order, wrong-type fields, the
// declaration version, problem paths, unknown frontmatter keys and '%' in file names.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/manifest.h"
#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::DumpProblems;
using testing::FindSkill;
using testing::HasProblem;
using testing::Issues;
using testing::ProblemsWith;
using testing::SkillNames;
using testing::TempTree;
using testing::Walk;

Catalogue Scan(const std::vector<std::string>& roots) { return ScanCatalogue(roots, "SKILLS_DIR"); }

// Rule 1: `source` is the root the skill was found under, as configured.
TEST(Parity, SourceIsTheConfiguredRoot) {
  TempTree t;
  t.Skill("one/a", "a");
  t.Skill("one/skills/b", "b");
  t.Skill("two", "two");  // a root that is itself a skill
  Catalogue cat = Scan({t.Path("one"), t.Path("two")});
  ASSERT_EQ(SkillNames(cat), (std::vector<std::string>{"a", "b", "two"})) << DumpProblems(cat);
  EXPECT_EQ(FindSkill(cat, "a")->root, t.Path("one"));
  EXPECT_EQ(FindSkill(cat, "b")->root, t.Path("one"));
  EXPECT_EQ(FindSkill(cat, "two")->root, t.Path("two"));
  // The skill's own directory is still known (runs start there).
  EXPECT_EQ(FindSkill(cat, "b")->source, t.Path("one/skills/b"));
}

// Rule 2: the body starts after the closing `---` line and its line break.
TEST(Parity, BodyStartsAfterTheClosingFenceLine) {
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---\nX", false).body, "X");
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---\n\nX", false).body, "\nX");
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---\r\nX", false).body, "X");
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---  \nX\n", false).body, "X\n");
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---\n", false).body, "");
  EXPECT_EQ(ParseSkillMd("---\ndescription: d\n---", false).body, "");
}

// Rule 3: within a root, `<root>/<name>` skills first, then `<root>/skills/<name>`, each
// group collated; roots in the order configured.
TEST(Parity, DiscoveryOrderIsLayoutByLayout) {
  TempTree t;
  t.Skill("r1/zeta", "zeta");
  t.Skill("r1/Alpha", "Alpha");
  t.Skill("r1/skills/beta", "beta");
  t.Skill("r1/skills/Aardvark", "Aardvark");
  t.Skill("r1/skills/yak", "yak");
  t.Skill("r2/aaa", "aaa");
  Catalogue cat = Scan({t.Path("r1"), t.Path("r2")});
  EXPECT_EQ(SkillNames(cat),
            (std::vector<std::string>{"Alpha", "zeta", "Aardvark", "beta", "yak", "aaa"}))
      << DumpProblems(cat);
  Catalogue reversed = Scan({t.Path("r2"), t.Path("r1")});
  EXPECT_EQ(SkillNames(reversed).front(), "aaa");
}

// Rule 3: the skill limit keeps the first skills in discovery order.
TEST(Parity, SkillLimitFollowsDiscoveryOrder) {
  TempTree t;
  for (int i = 0; i < 32; ++i) {
    char name[16];
    snprintf(name, sizeof name, "s%02d", i);
    t.Skill(std::string("skills/") + name, name);
  }
  t.Skill("zz-direct", "zz-direct");  // a `<root>/<name>` skill comes before all of skills/
  Catalogue cat = Scan({t.root()});
  ASSERT_EQ(cat.skills.size(), kMaxSkills);
  EXPECT_EQ(cat.skills.front().name, "zz-direct");
  EXPECT_EQ(cat.skills.back().name, "s30");
  EXPECT_TRUE(HasProblem(cat, reason::kSkillLimit, t.Path("skills/s31"))) << DumpProblems(cat);
}

// Rule 3: a differing or null frontmatter name never stops a skill.
TEST(Parity, DifferingOrNullNameServedUnderDirectoryName) {
  TempTree t;
  t.Write("null/SKILL.md", "---\nname:\ndescription: d\n---\nbody");
  t.Write("tilde/SKILL.md", "---\nname: ~\ndescription: d\n---\nbody");
  t.Write("number/SKILL.md", "---\nname: 7\ndescription: d\n---\nbody");
  t.Skill("differs", "another-name");
  t.Write("absent/SKILL.md", "---\ndescription: d\n---\nbody");
  Catalogue cat = Scan({t.root()});
  EXPECT_EQ(SkillNames(cat),
            (std::vector<std::string>{"absent", "differs", "null", "number", "tilde"}))
      << DumpProblems(cat);
  for (const char* dir : {"null", "tilde", "number", "differs"}) {
    EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path(dir))) << dir << DumpProblems(cat);
  }
  EXPECT_EQ(ProblemsWith(cat, reason::kNameMismatch).size(), 4u) << DumpProblems(cat);
}

// Rule 4: a scalar of the wrong type counts as absent; the skill is still served.
TEST(Parity, WrongTypeScalarsCountAsAbsent) {
  ParsedSkillMd p =
      ParseSkillMd("---\nname: s\ndescription: 1.10\nwhen-to-use: yes\n---\nbody", false);
  ASSERT_TRUE(p.servable) << Issues(p);
  EXPECT_FALSE(p.description.has_value());
  EXPECT_EQ(p.when_to_use, "yes");  // YAML 1.2 core: `yes` is a string
  EXPECT_TRUE(p.issues.empty()) << Issues(p);

  TempTree t;
  t.Skill("s", "s", "when-to-use: [a]\n");
  t.Write("f/SKILL.md", "---\nname: f\ndescription: 1.10\n---\nbody");
  Catalogue cat = Scan({t.root()});
  ASSERT_EQ(SkillNames(cat), (std::vector<std::string>{"f", "s"})) << DumpProblems(cat);
  EXPECT_FALSE(FindSkill(cat, "f")->description.has_value());
  EXPECT_FALSE(FindSkill(cat, "s")->when_to_use.has_value());
  // Only the skills extension minds (it needs a description to list `f`).
  ASSERT_EQ(cat.problems.size(), 1u) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kSkillsExtFrontmatter, t.Path("f"))) << DumpProblems(cat);
}

// Rule 4: `when_to_use` is read as well as `when-to-use` (which wins when both are strings).
TEST(Parity, WhenToUseUnderscoreSpelling) {
  EXPECT_EQ(ParseSkillMd("---\nwhen_to_use: later\n---\n", false).when_to_use, "later");
  EXPECT_EQ(ParseSkillMd("---\nwhen-to-use: a\nwhen_to_use: b\n---\n", false).when_to_use, "a");
  EXPECT_EQ(ParseSkillMd("---\nwhen-to-use: 3\nwhen_to_use: b\n---\n", false).when_to_use, "b");
  EXPECT_TRUE(ParseSkillMd("---\nwhen_to_use: x\n---\n", false).issues.empty());
}

// Rule 5: only the integer 1 is a known version; anything else costs the scripts only.
TEST(Parity, UnknownDeclarationVersionKeepsInstructionsRunsNothing) {
  for (const char* v : {"\"1\"", "1.5", "-1", "null", "18446744073709551617"}) {
    TempTree t;
    t.Skill("s", "s",
            std::string("mcp-host:\n  version: ") + v +
                "\n  run:\n    - {script: a.js, interpreter: node}\n");
    t.Write("s/a.js", "1");
    Catalogue cat = Scan({t.root()});
    const Skill* s = FindSkill(cat, "s");
    ASSERT_NE(s, nullptr) << v << DumpProblems(cat);
    EXPECT_FALSE(s->declaration_ok) << v;
    EXPECT_TRUE(s->runs.empty()) << v;
    EXPECT_EQ(s->body, "# Instructions\n") << v;
    EXPECT_TRUE(HasProblem(cat, reason::kDeclaration, t.Path("s"))) << v << DumpProblems(cat);
  }
}

// Rule 6: problems about a skill name its directory (or the root), not SKILL.md.
TEST(Parity, ProblemPathIsTheSkillDirectory) {
  TempTree t;
  t.Skill("r/mismatch", "other");
  t.Write("r/broken/SKILL.md", "no frontmatter\n");
  t.Skill("r/decl", "decl", "mcp-host:\n  version: 2\n");
  t.Fifo("r/fifo/SKILL.md");
  t.Skill("solo", "other");  // a root that is itself a skill
  Catalogue cat = Scan({t.Path("r"), t.Path("solo")});
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("r/mismatch"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kMalformedFrontmatter, t.Path("r/broken")));
  EXPECT_TRUE(HasProblem(cat, reason::kDeclaration, t.Path("r/decl")));
  EXPECT_TRUE(HasProblem(cat, reason::kUnreadableSkillMd, t.Path("r/fifo")));
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("solo")));
  for (const auto& p : cat.problems) {
    EXPECT_EQ(p.path.find("SKILL.md"), std::string::npos) << DumpProblems(cat);
  }
}

// Rule 6: every problem path starts from the root as configured, even through a link.
TEST(Parity, ProblemPathsStartFromTheConfiguredRoot) {
  TempTree t;
  t.Skill("real/s", "other",
          "mcp-host:\n  version: 1\n  run:\n    - {script: gone.js, interpreter: node}\n");
  t.Write("real/s/100%.txt", "1");
  t.Symlink("real", "link");
  Catalogue cat = Scan({t.Path("link")});
  ASSERT_EQ(SkillNames(cat), std::vector<std::string>{"s"}) << DumpProblems(cat);
  EXPECT_EQ(cat.skills[0].source, t.Path("real/s"));  // runs still use the real directory
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("link/s"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kDeclaredScriptMissing, t.Path("link/s/gone.js")))
      << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kUnusablePath, t.Path("link/s/100%.txt")))
      << DumpProblems(cat);
  // The skills extension's own report, at the same path as the name-mismatch.
  EXPECT_TRUE(HasProblem(cat, reason::kSkillsExtName, t.Path("link/s"))) << DumpProblems(cat);
  EXPECT_EQ(cat.problems.size(), 4u) << DumpProblems(cat);
}

// Rule 6b: unknown top-level keys are ignored and reported by name; the skill is served and
// its declaration still counts.
TEST(Parity, UnknownTopLevelKeysReportedByName) {
  TempTree t;
  t.Skill("s", "s",
          "hooks:\n  PostToolUse: [{command: rm -rf ~}]\nfavourite-colour: blue\n"
          "license: MIT\nversion: 2.0\nallowed-tools: [Read]\nmetadata: {a: b}\n"
          "when_to_use: now\n"
          "mcp-host:\n  version: 1\n  run:\n    - {script: a.js, interpreter: node}\n");
  t.Write("s/a.js", "1");
  Catalogue cat = Scan({t.root()});
  const Skill* s = FindSkill(cat, "s");
  ASSERT_NE(s, nullptr) << DumpProblems(cat);
  EXPECT_TRUE(s->declaration_ok);
  EXPECT_EQ(s->runs.size(), 1u);
  std::vector<Problem> decl = ProblemsWith(cat, reason::kDeclaration);
  ASSERT_EQ(decl.size(), 1u) << DumpProblems(cat);
  EXPECT_EQ(decl[0].path, t.Path("s"));
  EXPECT_NE(decl[0].detail.find("'hooks'"), std::string::npos) << decl[0].detail;
  EXPECT_NE(decl[0].detail.find("'favourite-colour'"), std::string::npos) << decl[0].detail;
  for (const char* known :
       {"'license'", "'version'", "'allowed-tools'", "'metadata'", "'when_to_use'", "'mcp-host'"}) {
    EXPECT_EQ(decl[0].detail.find(std::string(known) + " (line"), std::string::npos) << known;
  }
  EXPECT_EQ(cat.problems.size(), 1u) << DumpProblems(cat);
}

// Rule 7: any '%' makes a name unusable: a file is left out, a directory with everything
// beneath it, each with exactly one `unusable-path` problem.
TEST(Parity, AnyPercentMakesAPathUnusable) {
  TempTree t;
  t.Write("s/ok.txt", "1");
  t.Write("s/100%.txt", "1");
  t.Write("s/c%zz.txt", "1");
  t.Write("s/50%off/a.txt", "1");
  t.Write("s/50%off/deep/b.txt", "1");
  t.Write("s/plain/x%y", "1");
  ManifestResult m = Walk(t.Path("s"));
  std::vector<std::string> paths;
  for (const auto& f : m.files) paths.push_back(f.path);
  EXPECT_EQ(paths, std::vector<std::string>{"ok.txt"});
  std::vector<std::string> problem_paths;
  for (const auto& p : m.problems) {
    EXPECT_EQ(p.reason, reason::kUnusablePath);
    problem_paths.push_back(p.path);
  }
  std::sort(problem_paths.begin(), problem_paths.end());
  EXPECT_EQ(problem_paths, (std::vector<std::string>{t.Path("s/100%.txt"), t.Path("s/50%off"),
                                                     t.Path("s/c%zz.txt"), t.Path("s/plain/x%y")}));
}

}  // namespace
}  // namespace skillmcp
