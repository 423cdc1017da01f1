// The places a namespaced run's view hides (broker/run/private_places.h), on real
// directories: resolved, deduplicated, absent ones left out, never one holding the system.
#include "broker/run/private_places.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "broker/run/launch_config.h"

namespace skillmcp {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class PrivatePlacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skill-mcp-places-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(base_, ignored);
  }
  std::string base_;
};

TEST_F(PrivatePlacesTest, TheBrokersHomeAndRuntimeDirectoryJoinTheFixedPlacesResolved) {
  ASSERT_EQ(mkdir((base_ + "/home").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((base_ + "/runtime").c_str(), 0700), 0);
  ASSERT_EQ(symlink((base_ + "/home").c_str(), (base_ + "/home-link").c_str()), 0);
  const auto places = PrivatePlaces(base_ + "/home-link", base_ + "/runtime");
  EXPECT_TRUE(Has(places, base_ + "/home")) << "the link's target, resolved";
  EXPECT_FALSE(Has(places, base_ + "/home-link"));
  EXPECT_TRUE(Has(places, base_ + "/runtime"));
  for (const char* fixed : kPrivatePlaces) {
    struct stat st {};
    const std::string real = std::filesystem::weakly_canonical(fixed).string();
    if (stat(fixed, &st) == 0 && S_ISDIR(st.st_mode))
      EXPECT_TRUE(Has(places, real)) << fixed << " exists here";
    else
      EXPECT_FALSE(Has(places, fixed)) << fixed << " is absent here";
  }
  EXPECT_TRUE(std::is_sorted(places.begin(), places.end()));
  EXPECT_EQ(std::adjacent_find(places.begin(), places.end()), places.end()) << "duplicates";
}

// why: covering "/" or an ancestor of /usr would hide what every run needs to start.
TEST_F(PrivatePlacesTest, AHomeThatHoldsTheSystemIsNeverAPlace) {
  for (const char* home : {"/", "/usr", "/etc", "/proc"}) {
    const auto places = PrivatePlaces(home, "");
    EXPECT_FALSE(Has(places, home)) << home;
    EXPECT_FALSE(Has(places, "/")) << home;
  }
  // A relative, empty, absent or non-directory HOME is no place either.
  ASSERT_EQ(close(creat((base_ + "/file").c_str(), 0644)), 0);
  for (const std::string& home : {std::string("home/u"), std::string(""),
                                  base_ + "/absent", base_ + "/file"})
    EXPECT_FALSE(Has(PrivatePlaces(home, ""), home)) << home;
}

// The places join the skills roots in what a namespaced run's view covers.
TEST_F(PrivatePlacesTest, HiddenRootsCarryThePlacesShortestFirst) {
  ASSERT_EQ(mkdir((base_ + "/root").c_str(), 0755), 0);
  const auto hidden = HiddenRoots({base_ + "/root"}, {}, {"/var/tmp", base_ + "/home"});
  EXPECT_EQ(hidden, (std::vector<std::string>{"/var/tmp", base_ + "/home", base_ + "/root"}));
}

}  // namespace
}  // namespace skillmcp
