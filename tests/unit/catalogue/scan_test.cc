#include "broker/catalogue/scan.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/roots.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::DumpProblems;
using testing::FindSkill;
using testing::HasProblem;
using testing::ProblemsWith;
using testing::Scan;
using testing::SkillNames;
using testing::TempTree;

TEST(Scan, RootItselfIsTheSkill) {
  TempTree t;
  t.Skill("my-skill", "my-skill");
  t.Skill("my-skill/nested", "nested");  // not looked at: the root is one skill
  Catalogue cat = Scan(t.Path("my-skill"));
  ASSERT_EQ(SkillNames(cat), std::vector<std::string>{"my-skill"}) << DumpProblems(cat);
  EXPECT_EQ(cat.skills[0].source, t.Path("my-skill"));
  EXPECT_EQ(cat.roots, std::vector<std::string>{t.Path("my-skill")});
  EXPECT_EQ(cat.roots_from, "SKILLS_DIR");
}

TEST(Scan, DirectoryOfSkills) {
  TempTree t;
  t.Skill("b", "b");
  t.Skill("a", "a");
  t.Write("README.md", "not a skill\n");  // plain files are not candidates
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(cat.problems.empty()) << DumpProblems(cat);
}

TEST(Scan, SkillsSubdirectoryLayout) {
  TempTree t;
  t.Skill("skills/x", "x");
  t.Skill("y", "y");
  Catalogue cat = Scan(t.root());
  // `<root>/<name>` skills come before `<root>/skills/<name>` ones.
  EXPECT_EQ(SkillNames(cat), (std::vector<std::string>{"y", "x"})) << DumpProblems(cat);
  EXPECT_FALSE(HasProblem(cat, reason::kNoSkillMd, t.Path("skills")));
}

TEST(Scan, SkillsDirectoryWithItsOwnSkillMdIsASkill) {
  TempTree t;
  t.Skill("skills", "skills");
  t.Skill("skills/inner", "inner");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"skills"}) << DumpProblems(cat);
}

TEST(Scan, CandidateWithoutSkillMd) {
  TempTree t;
  t.Mkdir("empty");
  t.Skill("ok", "ok");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(HasProblem(cat, reason::kNoSkillMd, t.Path("empty"))) << DumpProblems(cat);
}

// Dot entries are skipped silently, even one holding a SKILL.md.
TEST(Scan, DotDirectoriesSkippedSilently) {
  TempTree t;
  t.Write(".git/HEAD", "ref: refs/heads/main\n");
  t.Skill(".hidden", "hidden");
  t.Skill("ok", "ok");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(cat.problems.empty()) << DumpProblems(cat);
}

TEST(Scan, ServedUnderDirectoryNameNotFrontmatterName) {
  TempTree t;
  t.Skill("weather", "payments");
  Catalogue cat = Scan(t.root());
  ASSERT_EQ(SkillNames(cat), std::vector<std::string>{"weather"});
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("weather"))) << DumpProblems(cat);
  EXPECT_EQ(cat.skills[0].description, "The payments skill.");
}

TEST(Scan, MatchingFrontmatterNameIsQuiet) {
  TempTree t;
  t.Skill("weather", "weather");
  EXPECT_TRUE(Scan(t.root()).problems.empty());
}

TEST(Scan, UnusableDirectoryNameSkipped) {
  TempTree t;
  t.Skill("has space", "x");
  t.Skill("-dash", "x");
  t.Skill(std::string(65, 'a'), "x");
  t.Skill(std::string(64, 'b'), "x");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{std::string(64, 'b')}) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kUnusableName, t.Path("has space")));
  EXPECT_TRUE(HasProblem(cat, reason::kUnusableName, t.Path("-dash")));
  EXPECT_TRUE(HasProblem(cat, reason::kUnusableName, t.Path(std::string(65, 'a'))));
}

TEST(Scan, SymlinkedSkillInsideRootServedUnderTargetName) {
  TempTree t;
  t.Skill("shared/bar", "bar");
  t.Symlink("../shared/bar", "skills/foo");
  Catalogue cat = Scan(t.root());
  ASSERT_NE(FindSkill(cat, "bar"), nullptr) << DumpProblems(cat);
  EXPECT_EQ(FindSkill(cat, "foo"), nullptr);
  EXPECT_EQ(FindSkill(cat, "bar")->source, t.Path("shared/bar"));
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("skills/foo"))) << DumpProblems(cat);
}

TEST(Scan, SymlinkWithSameNameInsideRootIsQuiet) {
  TempTree t;
  t.Skill("shared/foo", "foo");
  t.Symlink("../shared/foo", "skills/foo");
  Catalogue cat = Scan(t.root());
  ASSERT_NE(FindSkill(cat, "foo"), nullptr) << DumpProblems(cat);
  EXPECT_TRUE(ProblemsWith(cat, reason::kNameMismatch).empty()) << DumpProblems(cat);
}

TEST(Scan, SymlinkLeavingRootRefused) {
  TempTree t;
  t.Skill("outside/evil", "evil");
  t.Skill("root/ok", "ok");
  t.Symlink(t.Path("outside/evil"), "root/evil");
  Catalogue cat = Scan(t.Path("root"));
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(HasProblem(cat, reason::kSymlinkEscape, t.Path("root/evil"))) << DumpProblems(cat);
}

TEST(Scan, AbsoluteSymlinkStayingInsideRootServed) {
  TempTree t;
  t.Skill("root/shared/foo", "foo");
  t.Symlink(t.Path("root/shared/foo"), "root/skills/foo");
  Catalogue cat = Scan(t.Path("root"));
  EXPECT_NE(FindSkill(cat, "foo"), nullptr) << DumpProblems(cat);
}

TEST(Scan, SameDirectoryReachedTwiceIsOneSkill) {
  TempTree t;
  t.Skill("alpha", "alpha");
  t.Symlink("alpha", "beta");
  Catalogue cat = ScanCatalogue({t.root(), t.root()}, "SKILLS_DIR");
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"alpha"});
  EXPECT_TRUE(ProblemsWith(cat, reason::kDuplicateName).empty()) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kNameMismatch, t.Path("beta")));
  // The root was listed twice; its one fault is reported once.
  EXPECT_EQ(ProblemsWith(cat, reason::kNameMismatch).size(), 1u) << DumpProblems(cat);
}

TEST(Scan, DuplicateNameAcrossRootsRefusesBoth) {
  TempTree t;
  t.Skill("one/dup", "dup");
  t.Skill("two/dup", "dup");
  t.Skill("two/solo", "solo");
  Catalogue cat = ScanCatalogue({t.Path("one"), t.Path("two")}, "MCP_SKILLS_PATH");
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"solo"});
  // One problem per name, at the first directory found, naming both.
  std::vector<Problem> dup = ProblemsWith(cat, reason::kDuplicateName);
  ASSERT_EQ(dup.size(), 1u) << DumpProblems(cat);
  EXPECT_EQ(dup[0].path, t.Path("one/dup"));
  EXPECT_NE(dup[0].detail.find(t.Path("two/dup")), std::string::npos) << dup[0].detail;
}

TEST(Scan, DuplicateNameViaLinkRefusesBoth) {
  TempTree t;
  t.Skill("one/foo", "foo");
  t.Skill("two/other/foo", "foo");  // `other` has no SKILL.md, so is not a skill itself
  t.Symlink("other/foo", "two/bar");
  Catalogue cat = ScanCatalogue({t.Path("one"), t.Path("two")}, "MCP_SKILLS_PATH");
  EXPECT_EQ(FindSkill(cat, "foo"), nullptr) << DumpProblems(cat);
  EXPECT_EQ(ProblemsWith(cat, reason::kDuplicateName).size(), 1u) << DumpProblems(cat);
}

TEST(Scan, UnreadableRoots) {
  TempTree t;
  t.Write("file", "x");
  t.Symlink("nowhere", "dangling");
  t.Skill("good/ok", "ok");
  Catalogue cat = ScanCatalogue(
      {t.Path("file"), t.Path("missing"), t.Path("dangling"), t.Path("good")}, "SKILLS_DIR");
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(HasProblem(cat, reason::kRootUnreadable, t.Path("file"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kRootUnreadable, t.Path("missing")));
  EXPECT_TRUE(HasProblem(cat, reason::kRootUnreadable, t.Path("dangling")));
}

TEST(Scan, UnlistableRootIsReported) {
  TempTree t;
  t.Skill("r/ok", "ok");
  ASSERT_EQ(chmod(t.root().c_str(), 0755), 0);
  ASSERT_EQ(chmod(t.Path("r").c_str(), 0), 0);
  // Scanned by an ordinary uid in a child: root would read a mode-000 directory anyway.
  auto scan_unprivileged = [&] {
    if (geteuid() == 0 &&
        (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
      _exit(2);
    }
    Catalogue cat = Scan(t.Path("r"));
    _exit(HasProblem(cat, reason::kRootUnreadable, t.Path("r")) ? 0 : 1);
  };
  EXPECT_EXIT(scan_unprivileged(), ::testing::ExitedWithCode(0), "");
}

TEST(Scan, RelativeRootReportedAbsolute) {
  TempTree t;
  t.Mkdir("r/empty");
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof old), nullptr);
  ASSERT_EQ(chdir(t.root().c_str()), 0);
  Catalogue cat = Scan("r");
  ASSERT_EQ(chdir(old), 0);
  EXPECT_TRUE(HasProblem(cat, reason::kNoSkillMd, t.Path("r/empty"))) << DumpProblems(cat);
}

TEST(Scan, SkillMdFifoDoesNotHang) {
  TempTree t;
  t.Fifo("piped/SKILL.md");
  t.Skill("ok", "ok");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(HasProblem(cat, reason::kUnreadableSkillMd, t.Path("piped"))) << DumpProblems(cat);
}

// A SKILL.md that is a directory makes no skill (`no-skill-md`); a dangling SKILL.md link
// is a SKILL.md that cannot be read.
TEST(Scan, SkillMdDirectoryIsNoSkillMdDanglingIsUnreadable) {
  TempTree t;
  t.Mkdir("dir/SKILL.md");
  t.Mkdir("dangle");
  t.Symlink("gone.md", "dangle/SKILL.md");
  Catalogue cat = Scan(t.root());
  EXPECT_TRUE(cat.skills.empty());
  EXPECT_TRUE(HasProblem(cat, reason::kNoSkillMd, t.Path("dir"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kUnreadableSkillMd, t.Path("dangle"))) << DumpProblems(cat);
  EXPECT_EQ(cat.problems.size(), 2u) << DumpProblems(cat);
}

TEST(Scan, SkillMdLinkLeavingSkillRefused) {
  TempTree t;
  t.Skill("elsewhere", "x");
  t.Mkdir("root/s");
  t.Symlink(t.Path("elsewhere/SKILL.md"), "root/s/SKILL.md");
  Catalogue cat = Scan(t.Path("root"));
  EXPECT_TRUE(cat.skills.empty());
  EXPECT_TRUE(HasProblem(cat, reason::kSymlinkEscape, t.Path("root/s"))) << DumpProblems(cat);
}

TEST(Scan, MalformedFrontmatterNotServed) {
  TempTree t;
  t.Write("bad/SKILL.md", "---\nname: bad\ndescription: [unclosed\n---\nbody\n");
  t.Write("nofence/SKILL.md", "# no frontmatter\n");
  t.Skill("ok", "ok");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), std::vector<std::string>{"ok"});
  EXPECT_TRUE(HasProblem(cat, reason::kMalformedFrontmatter, t.Path("bad")));
  EXPECT_TRUE(HasProblem(cat, reason::kMalformedFrontmatter, t.Path("nofence")));
}

TEST(Scan, BrokenDeclarationKeepsInstructionsAndListing) {
  TempTree t;
  t.Skill("s", "s", "mcp-host:\n  version: 7\n  run:\n    - {script: a.js, interpreter: node}\n");
  t.Write("s/a.js", "1");
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "s");
  ASSERT_NE(s, nullptr) << DumpProblems(cat);
  EXPECT_TRUE(s->declaration_present);
  EXPECT_FALSE(s->declaration_ok);
  EXPECT_TRUE(s->runs.empty());
  EXPECT_EQ(s->body, "# Instructions\n");
  EXPECT_TRUE(HasProblem(cat, reason::kDeclaration, t.Path("s"))) << DumpProblems(cat);
}

TEST(Scan, DeclaredScriptMissing) {
  TempTree t;
  t.Skill("s", "s",
          "mcp-host:\n  version: 1\n  egress: [api.example]\n  run:\n"
          "    - {script: scripts/here.js, interpreter: node, env: [K]}\n"
          "    - {script: scripts/gone.js, interpreter: node}\n"
          "    - {script: scripts/fifo.js, interpreter: node}\n");
  t.Write("s/scripts/here.js", "console.log(1)\n");
  t.Fifo("s/scripts/fifo.js");
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "s");
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->declaration_ok);
  // A missing script stays declared (skill_run refuses it at its path check); each is one
  // problem at the skill directory.
  ASSERT_EQ(s->runs.size(), 3u) << DumpProblems(cat);
  EXPECT_EQ(s->runs[0].script, "scripts/here.js");
  EXPECT_EQ(s->runs[0].env, std::vector<std::string>{"K"});
  EXPECT_EQ(s->runs[1].script, "scripts/gone.js");
  EXPECT_EQ(s->runs[2].script, "scripts/fifo.js");
  EXPECT_EQ(s->declared_egress, std::vector<std::string>{"api.example"});
  std::vector<Problem> missing = ProblemsWith(cat, reason::kDeclaredScriptMissing);
  ASSERT_EQ(missing.size(), 2u) << DumpProblems(cat);
  EXPECT_EQ(missing[0].path, t.Path("s"));
  EXPECT_NE(missing[0].detail.find("scripts/gone.js"), std::string::npos);
  EXPECT_EQ(missing[1].path, t.Path("s"));
  EXPECT_NE(missing[1].detail.find("scripts/fifo.js"), std::string::npos);
}

TEST(Scan, DeclaredScriptLinkLeavingSkillIsMissing) {
  TempTree t;
  t.Write("outside.js", "x");
  t.Skill("root/s", "s",
          "mcp-host:\n  version: 1\n  run:\n    - {script: run.js, interpreter: node}\n");
  t.Symlink(t.Path("outside.js"), "root/s/run.js");
  Catalogue cat = Scan(t.Path("root"));
  const Skill* s = FindSkill(cat, "s");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->runs.size(), 1u);  // still declared
  EXPECT_TRUE(HasProblem(cat, reason::kDeclaredScriptMissing, t.Path("root/s")))
      << DumpProblems(cat);
}

TEST(Scan, SkillLimitKeepsFirstServableInCollationOrder) {
  TempTree t;
  for (int i = 0; i < 34; ++i) {
    char name[16];
    snprintf(name, sizeof name, "s%02d", i);
    t.Skill(name, name);
  }
  t.Write("a-broken/SKILL.md", "no frontmatter\n");  // sorts first, takes no slot
  Catalogue cat = Scan(t.root());
  ASSERT_EQ(cat.skills.size(), kMaxSkills);
  EXPECT_EQ(cat.skills.front().name, "s00");
  EXPECT_EQ(cat.skills.back().name, "s31");
  std::vector<Problem> limit = ProblemsWith(cat, reason::kSkillLimit);
  ASSERT_EQ(limit.size(), 1u) << DumpProblems(cat);
  EXPECT_EQ(limit[0].path, t.root());
  EXPECT_NE(limit[0].detail.find("s32, s33"), std::string::npos) << limit[0].detail;
}

TEST(Scan, SkillsCollatedCaseInsensitively) {
  TempTree t;
  t.Skill("beta", "beta");
  t.Skill("Alpha", "Alpha");
  t.Skill("gamma", "gamma");
  t.Skill("Beta2", "Beta2");
  Catalogue cat = Scan(t.root());
  EXPECT_EQ(SkillNames(cat), (std::vector<std::string>{"Alpha", "beta", "Beta2", "gamma"}));
}

TEST(Scan, BodyCappedAndFlagged) {
  TempTree t;
  std::string body = "\n" + std::string(kSkillMdCap + 1000, 'x');
  t.Skill("big", "big", "", body);
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "big");
  ASSERT_NE(s, nullptr) << DumpProblems(cat);
  EXPECT_TRUE(s->body_truncated);
  EXPECT_LT(s->body.size(), kSkillMdCap);
  EXPECT_EQ(s->body.substr(0, 4), "xxxx");
  // The manifest still reports the real size.
  ASSERT_FALSE(s->files.empty());
  EXPECT_GT(s->files[0].size, kSkillMdCap);
}

TEST(Scan, DirDescriptorIsTheRealDirectory) {
  TempTree t;
  t.Skill("real", "real");
  t.Symlink("real", "link");
  Catalogue cat = Scan(t.root());
  const Skill* s = FindSkill(cat, "real");
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->dir.valid());
  struct stat a {
  }, b{};
  ASSERT_EQ(fstat(s->dir.get(), &a), 0);
  ASSERT_EQ(stat(t.Path("real").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  int flags = fcntl(s->dir.get(), F_GETFL);
  EXPECT_TRUE(flags & O_PATH);
  EXPECT_TRUE(fcntl(s->dir.get(), F_GETFD) & FD_CLOEXEC);
}

// A broken symlinked entry is `symlink-escape`, as the reference says.
TEST(Scan, DanglingSkillLinkIsSymlinkEscape) {
  TempTree t;
  t.Symlink("nowhere", "ghost");
  t.Symlink("loop", "loop");
  Catalogue cat = Scan(t.root());
  EXPECT_TRUE(HasProblem(cat, reason::kSymlinkEscape, t.Path("ghost"))) << DumpProblems(cat);
  EXPECT_TRUE(HasProblem(cat, reason::kSymlinkEscape, t.Path("loop"))) << DumpProblems(cat);
  EXPECT_EQ(cat.problems.size(), 2u) << DumpProblems(cat);
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

TEST(Scan, CandidateCapBoundsOpenDescriptors) {
  testing::TempTree t;
  for (size_t i = 0; i < kMaxCandidates + 5; ++i) t.Skill("d" + std::to_string(i), "x");
  Catalogue cat = ScanCatalogue({t.root()}, "SKILLS_DIR");
  EXPECT_EQ(cat.skills.size(), kMaxSkills);
  auto limits = testing::ProblemsWith(cat, reason::kSkillLimit);
  // One problem for all: the skills over kMaxSkills and the unexamined rest.
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].path, t.root());
  EXPECT_NE(limits[0].detail.find("not examined"), std::string::npos) << limits[0].detail;
}

}  // namespace
}  // namespace skillmcp
