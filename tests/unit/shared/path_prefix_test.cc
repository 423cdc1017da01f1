// The one string check of path containment (shared/path_prefix.h) that the broker's module
// directories and the worker's covers share.
#include "shared/path_prefix.h"

#include <gtest/gtest.h>

namespace skillmcp {
namespace {

TEST(IsSameOrBeneath, ItselfAndWhatLiesBeneath) {
  EXPECT_TRUE(IsSameOrBeneath("/srv/skills", "/srv/skills"));
  EXPECT_TRUE(IsSameOrBeneath("/srv/skills/a", "/srv/skills"));
  EXPECT_TRUE(IsSameOrBeneath("/srv/skills/a/b/c", "/srv/skills"));
  EXPECT_FALSE(IsSameOrBeneath("/srv", "/srv/skills")) << "a parent";
  EXPECT_FALSE(IsSameOrBeneath("/srv/other", "/srv/skills")) << "a sibling";
}

// A name that merely starts like the directory is a sibling, not a child.
TEST(IsSameOrBeneath, ASharedPrefixIsNotContainment) {
  EXPECT_FALSE(IsSameOrBeneath("/srv/skills2", "/srv/skills"));
  EXPECT_FALSE(IsSameOrBeneath("/srv/skills2/a", "/srv/skills"));
  EXPECT_FALSE(IsSameOrBeneath("/tmpfoo", "/tmp"));
  EXPECT_FALSE(IsSameOrBeneath("/srv/skills-old/node_modules", "/srv/skills"));
}

TEST(IsSameOrBeneath, TheRootHoldsEveryAbsolutePath) {
  EXPECT_TRUE(IsSameOrBeneath("/", "/"));
  EXPECT_TRUE(IsSameOrBeneath("/node_modules", "/"));
  EXPECT_TRUE(IsSameOrBeneath("/a/b", "/"));
  EXPECT_FALSE(IsSameOrBeneath("a/b", "/")) << "a relative path";
}

// Fail closed: nothing is inside a missing directory, and a missing path is inside nothing.
TEST(IsSameOrBeneath, EmptyIsNeverContainment) {
  EXPECT_FALSE(IsSameOrBeneath("/srv/skills", ""));
  EXPECT_FALSE(IsSameOrBeneath("/", ""));
  EXPECT_FALSE(IsSameOrBeneath("", "/"));
  EXPECT_FALSE(IsSameOrBeneath("", ""));
}

// What the worker's spec takes for its Landlock paths (shared/run_spec_codec.cc).
TEST(IsNormalisedAbsolutePath, OnlyRealPathShapes) {
  for (const char* good : {"/", "/usr", "/usr/local/etc", "/a.b/..c/.d", "/tmp/skill-mcp-run.x"})
    EXPECT_TRUE(IsNormalisedAbsolutePath(good)) << good;
  for (const char* bad : {"", "usr", "/usr/", "//usr", "/usr//local", "/usr/./local", "/usr/.",
                          "/usr/local/..", "/..", "/."})
    EXPECT_FALSE(IsNormalisedAbsolutePath(bad)) << bad;
  EXPECT_FALSE(IsNormalisedAbsolutePath(std::string_view("/a\0b", 4)));
}

}  // namespace
}  // namespace skillmcp
