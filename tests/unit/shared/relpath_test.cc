#include "shared/relpath.h"

#include <gtest/gtest.h>

#include <string>

namespace skillmcp {
namespace {

TEST(RelPath, AcceptsPlainSegments) {
  EXPECT_EQ(CheckRelativePath("SKILL.md"), PathRefusal::kNone);
  EXPECT_EQ(CheckRelativePath("scripts/run.js"), PathRefusal::kNone);
  EXPECT_EQ(CheckRelativePath("a b/c.txt"), PathRefusal::kNone);
  EXPECT_EQ(CheckRelativePath("...hidden"), PathRefusal::kNone);
}

TEST(RelPath, RefusesEmpty) { EXPECT_EQ(CheckRelativePath(""), PathRefusal::kEmpty); }

TEST(RelPath, RefusesOverlong) {
  EXPECT_EQ(CheckRelativePath(std::string(1024, 'a')), PathRefusal::kNone);
  EXPECT_EQ(CheckRelativePath(std::string(1025, 'a')), PathRefusal::kTooLong);
}

TEST(RelPath, RefusesNul) {
  EXPECT_EQ(CheckRelativePath(std::string("a\0b", 3)), PathRefusal::kNul);
}

TEST(RelPath, RefusesBackslash) {
  EXPECT_EQ(CheckRelativePath("scripts\\run.js"), PathRefusal::kBackslash);
}

TEST(RelPath, RefusesPercentEscape) {
  EXPECT_EQ(CheckRelativePath("%2e%2e/secret"), PathRefusal::kPercent);
  EXPECT_EQ(CheckRelativePath("a%2Fb"), PathRefusal::kPercent);
}

// Any '%' makes a path unusable, not only a valid %XX escape (docs/wire.md §1).
TEST(RelPath, RefusesAnyPercent) {
  for (const char* path : {"c%zz.txt", "100%.txt", "%", "a/b%", "dir%/x", "50%%"}) {
    EXPECT_EQ(CheckRelativePath(path), PathRefusal::kPercent) << path;
  }
}

TEST(RelPath, RefusesLeadingSlashAsEmptySegment) {
  EXPECT_EQ(CheckRelativePath("/etc/passwd"), PathRefusal::kEmptySegment);
  EXPECT_EQ(CheckRelativePath("a//b"), PathRefusal::kEmptySegment);
  EXPECT_EQ(CheckRelativePath("a/"), PathRefusal::kEmptySegment);
}

TEST(RelPath, RefusesDotSegments) {
  EXPECT_EQ(CheckRelativePath(".."), PathRefusal::kDotSegment);
  EXPECT_EQ(CheckRelativePath("a/../b"), PathRefusal::kDotSegment);
  EXPECT_EQ(CheckRelativePath("./a"), PathRefusal::kDotSegment);
}

TEST(RelPath, RefusesBlankSegment) {
  EXPECT_EQ(CheckRelativePath("a/ \t/b"), PathRefusal::kBlankSegment);
}

TEST(RelPath, ChecksRunInWireOrder) {
  // NUL before backslash before percent before segment rules.
  EXPECT_EQ(CheckRelativePath(std::string("/\\%41\0", 6)), PathRefusal::kNul);
  EXPECT_EQ(CheckRelativePath("/..\\%41"), PathRefusal::kBackslash);
  EXPECT_EQ(CheckRelativePath("/../%41"), PathRefusal::kPercent);
  EXPECT_EQ(CheckRelativePath("/../%"), PathRefusal::kPercent);
}

TEST(RelPath, EveryRefusalHasADescription) {
  for (auto r : {PathRefusal::kEmpty, PathRefusal::kTooLong, PathRefusal::kNul,
                 PathRefusal::kBackslash, PathRefusal::kPercent, PathRefusal::kEmptySegment,
                 PathRefusal::kDotSegment, PathRefusal::kBlankSegment}) {
    EXPECT_STRNE(DescribePathRefusal(r), DescribePathRefusal(PathRefusal::kNone));
  }
}

TEST(SkillName, Pattern) {
  EXPECT_TRUE(IsUsableSkillName("weather"));
  EXPECT_TRUE(IsUsableSkillName("a.b_c-d9"));
  EXPECT_TRUE(IsUsableSkillName(std::string(64, 'x')));
  EXPECT_FALSE(IsUsableSkillName(std::string(65, 'x')));
  EXPECT_FALSE(IsUsableSkillName(""));
  EXPECT_FALSE(IsUsableSkillName(".hidden"));
  EXPECT_FALSE(IsUsableSkillName("-dash"));
  EXPECT_FALSE(IsUsableSkillName("bad name"));
  EXPECT_FALSE(IsUsableSkillName("caf\xc3\xa9"));
}

}  // namespace
}  // namespace skillmcp
