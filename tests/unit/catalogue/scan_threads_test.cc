// ScanCatalogue reads skills on several threads (broker/catalogue/scan.h): the catalogue
// must be exactly the one a single thread makes, skills, manifests and problems in the
// same order, with the skill limit applied to the same candidates.
#include <gtest/gtest.h>

#include <string>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::TempTree;

// Everything a listing shows, in order, as one text.
std::string Describe(const Catalogue& cat) {
  std::string out;
  for (const Skill& s : cat.skills) {
    out += "skill " + s.name + " " + s.source + " body=" + std::to_string(s.body.size()) + "\n";
    for (const ManifestFile& f : s.files) out += "  " + f.path + "\n";
  }
  return out + testing::DumpProblems(cat);
}

// 50 candidates, more than kMaxSkills servable: broken ones (no frontmatter, a name the
// directory does not carry, a missing declared script, a FIFO in the bundle) are spread
// among the good ones, so the limit falls in the middle of a batch.
void MakeMixedTree(const TempTree& t) {
  for (int i = 0; i < 50; ++i) {
    char dir[16];
    snprintf(dir, sizeof dir, "s%02d", i);
    const std::string d = dir;
    if (i % 7 == 3) {
      t.Write(d + "/SKILL.md", "no frontmatter\n");
    } else if (i % 11 == 5) {
      t.Skill(d, "other-name");
    } else if (i % 6 == 1) {
      t.Skill(d, d, "mcp-host:\n  version: 1\n  run:\n    - script: scripts/gone.js\n"
                    "      interpreter: node\n");
    } else {
      t.Skill(d, d);
    }
    if (i % 5 == 2) t.Fifo(d + "/pipe");
    for (int f = 0; f < 30; ++f) t.Write(d + "/refs/r" + std::to_string(f) + ".md", "x\n");
    // Non-ASCII paths take the ICU comparator, on whichever thread reads the skill.
    if (i % 4 == 0) t.Write(d + "/refs/\xc3\xa9t\xc3\xa9-" + std::to_string(i) + ".md", "x\n");
  }
}

TEST(ScanThreads, AnyNumberOfThreadsMakesTheSameCatalogue) {
  TempTree t;
  MakeMixedTree(t);
  const Catalogue one = ScanCatalogue({t.root()}, "SKILLS_DIR", 1);
  ASSERT_EQ(one.skills.size(), kMaxSkills);
  ASSERT_FALSE(testing::ProblemsWith(one, reason::kSkillLimit).empty()) << Describe(one);
  const std::string want = Describe(one);
  for (unsigned threads : {2u, 3u, 4u, 8u, 64u}) {
    EXPECT_EQ(Describe(ScanCatalogue({t.root()}, "SKILLS_DIR", threads)), want)
        << threads << " threads";
  }
  EXPECT_GE(DefaultScanThreads(), 1u);
  EXPECT_LE(DefaultScanThreads(), 4u);
}

// Zero threads is taken as one, never as "read nothing".
TEST(ScanThreads, ZeroThreadsReadsOnTheCallingThread) {
  TempTree t;
  t.Skill("only", "only");
  EXPECT_EQ(testing::SkillNames(ScanCatalogue({t.root()}, "SKILLS_DIR", 0)),
            (std::vector<std::string>{"only"}));
}

}  // namespace
}  // namespace skillmcp
