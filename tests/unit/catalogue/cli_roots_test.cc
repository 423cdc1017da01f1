// Root entries from SKILLS_DIR / MCP_SKILLS_PATH (docs/configuration.md, "Skills"): split on ':',
// each trimmed, empty ones skipped, relative ones resolved against the working directory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "broker/cli/roots.h"

namespace skillmcp {
namespace {

using Paths = std::vector<std::string>;

TEST(RootList, TrimsSkipsEmptyAndResolvesRelative) {
  EXPECT_EQ(SplitRootList("  solo-kit/ :: grove  ", "/srv/work"),
            (Paths{"/srv/work/solo-kit", "/srv/work/grove"}));
}

TEST(RootList, AbsoluteEntriesKeptNormalised) {
  EXPECT_EQ(SplitRootList("/a/b:/c/", "/cwd"), (Paths{"/a/b", "/c"}));
  EXPECT_EQ(SplitRootList("\t/a//b/./c/ \n", "/cwd"), (Paths{"/a/b/c"}));
}

TEST(RootList, BlankOnlyListIsEmpty) {
  EXPECT_TRUE(SplitRootList("", "/cwd").empty());
  EXPECT_TRUE(SplitRootList(" : \t :: ", "/cwd").empty());
}

TEST(RootList, InnerSpacesAreKept) {
  EXPECT_EQ(SplitRootList(" my skills ", "/cwd"), (Paths{"/cwd/my skills"}));
}

TEST(RootList, DotDotResolvedLexically) {
  EXPECT_EQ(ResolveLexically("../x", "/srv/work"), "/srv/x");
  EXPECT_EQ(ResolveLexically("./x/../y", "/srv"), "/srv/y");
  EXPECT_EQ(ResolveLexically("/../..", "/srv"), "/");
  EXPECT_EQ(ResolveLexically(".", "/"), "/");
  EXPECT_EQ(ResolveLexically(".", "/srv/work/"), "/srv/work");
}

}  // namespace
}  // namespace skillmcp
