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
  // One skill-limit problem, at the configured roots joined with ':', naming what is left.
  ASSERT_EQ(cat.problems.size(), 1u) << DumpProblems(cat);
  EXPECT_EQ(cat.problems[0].reason, reason::kSkillLimit);
  EXPECT_EQ(cat.problems[0].path, t.root());
  EXPECT_NE(cat.problems[0].detail.find("s31"), std::string::npos) << cat.problems[0].detail;
}

TEST(Parity, SkillLimitIsOneProblemAtTheRootsJoined) {
  TempTree t;
  for (int i = 0; i < 20; ++i) {
    t.Skill("a/a" + std::to_string(i), "a" + std::to_string(i));
    t.Skill("b/b" + std::to_string(i), "b" + std::to_string(i));
  }
  Catalogue cat = Scan({t.Path("a"), t.Path("b")});
  ASSERT_EQ(cat.skills.size(), kMaxSkills);
  std::vector<Problem> limit = ProblemsWith(cat, reason::kSkillLimit);
  ASSERT_EQ(limit.size(), 1u) << DumpProblems(cat);
  EXPECT_EQ(limit[0].path, t.Path("a") + ":" + t.Path("b"));
  EXPECT_EQ(cat.problems.size(), 1u) << DumpProblems(cat);
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
  // A null name (`name:` or `name: ~`) is no name, as an absent one: no mismatch.
  for (const char* dir : {"number", "differs"}) {
    EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path(dir))) << dir << DumpProblems(cat);
  }
  EXPECT_EQ(ProblemsWith(cat, reason::kNameMismatch).size(), 2u) << DumpProblems(cat);
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
  // Only the skills extension minds (it needs a description to list `f`), and says so
  // outside the problems.
  EXPECT_TRUE(cat.problems.empty()) << DumpProblems(cat);
  ASSERT_TRUE(FindSkill(cat, "f")->skills_ext_omission.has_value());
  EXPECT_EQ(FindSkill(cat, "f")->skills_ext_omission->reason, reason::kSkillsExtFrontmatter);
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

// Problem paths are built on the real path of the root and of the skill directory, never
// on the link the configuration names; file-level problems carry the skill directory.
TEST(Parity, ProblemPathsAreRealPaths) {
  TempTree t;
  t.Skill("real/s", "other",
          "mcp-host:\n  version: 1\n  run:\n    - {script: gone.js, interpreter: node}\n");
  t.Write("real/s/100%.txt", "1");
  t.Mkdir("real/empty");
  t.Symlink("real", "link");
  Catalogue cat = Scan({t.Path("link")});
  ASSERT_EQ(SkillNames(cat), std::vector<std::string>{"s"}) << DumpProblems(cat);
  EXPECT_EQ(cat.skills[0].source, t.Path("real/s"));
  EXPECT_EQ(cat.skills[0].root, t.Path("link"));  // `source` on the wire: as configured
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("real/s"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kDeclaredScriptMissing, t.Path("real/s")))
      << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kUnusablePath, t.Path("real/s"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kNoSkillMd, t.Path("real/empty"))) << DumpProblems(cat);
  EXPECT_EQ(cat.problems.size(), 4u) << DumpProblems(cat);
  // A skill linked from inside the root: its problems name its real directory.
  TempTree u;
  u.Skill("r/target", "other");
  u.Symlink("target", "r/alias");
  u.Skill("r/zz", "zz");
  Catalogue linked = Scan({u.Path("r")});
  EXPECT_TRUE(HasProblem(linked, reason::kNameMismatch, u.Path("r/target")))
      << DumpProblems(linked);
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
  // One problem per unknown key.
  std::vector<Problem> decl = ProblemsWith(cat, reason::kDeclaration);
  ASSERT_EQ(decl.size(), 2u) << DumpProblems(cat);
  EXPECT_EQ(decl[0].path, t.Path("s"));
  EXPECT_NE(decl[0].detail.find("'hooks'"), std::string::npos) << decl[0].detail;
  EXPECT_NE(decl[1].detail.find("'favourite-colour'"), std::string::npos) << decl[1].detail;
  for (const Problem& p : decl) {
    for (const char* known : {"'license'", "'version'", "'allowed-tools'", "'metadata'",
                              "'when_to_use'", "'mcp-host'"}) {
      EXPECT_EQ(p.detail.find(std::string(known) + " (line"), std::string::npos) << known;
    }
  }
  EXPECT_EQ(cat.problems.size(), 2u) << DumpProblems(cat);
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
  std::vector<std::string> named;
  for (const auto& p : m.problems) {
    EXPECT_EQ(p.reason, reason::kUnusablePath);
    EXPECT_EQ(p.path, t.Path("s"));  // the skill directory; the detail names the entry
    named.push_back(p.detail.substr(0, p.detail.find("': ") + 1));
  }
  std::sort(named.begin(), named.end());
  EXPECT_EQ(named,
            (std::vector<std::string>{"'100%.txt'", "'50%off'", "'c%zz.txt'", "'plain/x%y'"}));
}

// The reference's problem order: per root, what the scan met (links), then its
// `no-skill-md` directories, then each skill's problems in discovery order; then
// `duplicate-name` once per name, then the one `skill-limit`.
TEST(Parity, ProblemOrderIsPerRootThenDuplicatesThenLimit) {
  TempTree t;
  t.Mkdir("r1/a-empty");                                  // no-skill-md, sorts before the link
  t.Symlink("nowhere", "r1/b-broken");                    // a link problem
  t.Skill("r1/c-skill", "other");                         // name-mismatch
  t.Skill("r1/skills/d-skill", "d-skill", "hooks: 1\n");  // a third-layout skill's problem
  t.Skill("r1/dup", "dup");
  t.Mkdir("r2/a-empty");
  t.Symlink(t.root(), "r2/b-out");  // a link leaving the root
  t.Skill("r2/e-skill", "e-skill", "hooks: 1\n");
  t.Skill("r2/dup", "dup");
  t.Skill("r2/zz-over", "zz-over");
  for (int i = 10; i < 39; ++i) t.Skill("r2/skills/s" + std::to_string(i), "s" + std::to_string(i));
  Catalogue cat = Scan({t.Path("r1"), t.Path("r2")});
  std::vector<std::string> got;
  for (const Problem& p : cat.problems) got.push_back(p.reason + " " + p.path);
  const std::vector<std::string> want = {
      "symlink-escape " + t.Path("r1/b-broken"),
      "no-skill-md " + t.Path("r1/a-empty"),
      "name-mismatch " + t.Path("r1/c-skill"),
      "declaration " + t.Path("r1/skills/d-skill"),
      "symlink-escape " + t.Path("r2/b-out"),
      "no-skill-md " + t.Path("r2/a-empty"),
      "declaration " + t.Path("r2/e-skill"),
      "duplicate-name " + t.Path("r1/dup"),
      "skill-limit " + t.Path("r1") + ":" + t.Path("r2"),
  };
  EXPECT_EQ(got, want) << DumpProblems(cat);
  ASSERT_EQ(cat.skills.size(), kMaxSkills);
  EXPECT_NE(cat.problems.back().detail.find("s38"), std::string::npos);
}

// One problem per offending item, even two on one line; one per unknown key, at any level.
TEST(Parity, OneProblemPerOffendingItem) {
  TempTree t;
  t.Skill("s", "s",
          "mcp-host:\n  version: 1\n  color: red\n  run:\n"
          "    - {script: a.js, interpreter: node, env: [1-BAD, 2-BAD], shade: x}\n"
          "  env: [{name: 3X}, {name: 4X}]\n"
          "  egress: ['a b', 'c d']\n");
  t.Write("s/a.js", "1");
  Catalogue cat = Scan({t.root()});
  ASSERT_NE(FindSkill(cat, "s"), nullptr) << DumpProblems(cat);
  // color, run[0].shade, two env names, two server env entries, two egress entries.
  EXPECT_EQ(ProblemsWith(cat, reason::kDeclaration).size(), 8u) << DumpProblems(cat);
  EXPECT_EQ(cat.problems.size(), 8u) << DumpProblems(cat);
}

}  // namespace
}  // namespace skillmcp
