// ICU is opened only when a non-ASCII name or confirmation text needs it
// (shared/lazy_icu.h): an ASCII catalogue and ASCII prompts never map its 3 MiB. One
// process, in order: the ASCII work first, then the first non-ASCII character.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "broker/catalogue/collate.h"
#include "broker/confirm/shown_text.h"
#include "shared/lazy_icu.h"

namespace skillmcp {
namespace {

bool IcuMapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find("libicu") != std::string::npos;
}

TEST(LazyIcu, AsciiWorkLeavesItUnloadedAndTheFirstOtherCharacterLoadsIt) {
  ASSERT_FALSE(IcuMapped()) << "this test binary must not link ICU";
  std::vector<std::string> names = {"SKILL.md", "scripts/run.js", "references/A b.md", "_x"};
  CollateSortStrings(names);
  EXPECT_EQ(names, (std::vector<std::string>{"_x", "references/A b.md", "scripts/run.js",
                                             "SKILL.md"}));
  EXPECT_EQ(ShowUntrusted("tab\there \"q\" \x7f"), "tab\\there \\\"q\\\" \\u007f");
  EXPECT_FALSE(lazy_icu::Loaded());
  EXPECT_FALSE(IcuMapped());
  // A zero-width space is hidden (ICU: a format character), an e-acute is not.
  EXPECT_EQ(ShowUntrusted("a\xE2\x80\x8B" "b \xC3\xA9"), "a\\u200bb \xC3\xA9");
  EXPECT_TRUE(lazy_icu::Loaded());
  EXPECT_TRUE(IcuMapped());
  EXPECT_LT(CollateCompare("\xC3\xA9t\xC3\xA9", "f"), 0);  // primary: e-acute with e
}

}  // namespace
}  // namespace skillmcp
