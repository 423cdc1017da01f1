#include "broker/catalogue/collate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace skillmcp {
namespace {

TEST(Collate, CaseInsensitiveAtFirstLevel) {
  std::vector<std::string> v = {"SKILL.md", "scripts/y.js", "references/x.md"};
  CollateSortStrings(v);
  EXPECT_EQ(v, (std::vector<std::string>{"references/x.md", "scripts/y.js", "SKILL.md"}));
  // Plain byte order would put the upper-case name first.
  EXPECT_LT(std::string("SKILL.md"), std::string("references/x.md"));
}

// localeCompare's order: among names equal but for case, lower case first.
TEST(Collate, LowerCaseFirstAmongCaseTies) {
  EXPECT_LT(CollateCompare("apple", "Apple"), 0);
  EXPECT_GT(CollateCompare("Apple", "apple"), 0);
  EXPECT_LT(CollateCompare("aB", "Ab"), 0);         // the first position that differs decides
  EXPECT_LT(CollateCompare("Apple", "banana"), 0);  // case never outweighs a letter
  EXPECT_EQ(CollateCompare("foo", "foo"), 0);
  std::vector<std::string> a = {"foo", "Foo", "FOO", "fOo"};
  std::vector<std::string> b = {"FOO", "fOo", "foo", "Foo"};
  CollateSortStrings(a);
  CollateSortStrings(b);
  EXPECT_EQ(a, (std::vector<std::string>{"foo", "fOo", "Foo", "FOO"}));
  EXPECT_EQ(a, b);
  // The same for names ICU collates (not ASCII).
  EXPECT_LT(CollateCompare("\xC3\xA9"
                           "clair",
                           "\xC3\x89"
                           "clair"),
            0);
}

// Ties that remain (ignorable characters) fall back to bytes: the order never depends on
// the input order.
TEST(Collate, RemainingTiesBrokenByBytes) {
  EXPECT_NE(CollateCompare("a\001b", "ab"), 0);
  EXPECT_LT(CollateCompare("a\001b", "ab"), 0);
}

TEST(Collate, AccentsAreSecondaryDifferences) {
  // é sorts with e, before f; an accent outweighs case but not a letter.
  EXPECT_LT(CollateCompare("\xC3\xA9t\xC3\xA9", "f"), 0);
  EXPECT_LT(CollateCompare("ete", "\xC3\xA9t\xC3\xA9"), 0);
  EXPECT_LT(CollateCompare("Ete", "\xC3\xA9t\xC3\xA9"), 0);
}

TEST(Collate, InvalidUtf8IsTotal) {
  EXPECT_NE(CollateCompare("a\xFF", "a\xFE"), 0);
  EXPECT_EQ(CollateCompare("a\xFF", "a\xFF"), 0);
}

}  // namespace
}  // namespace skillmcp

// CollateSort's keyed path (all-ASCII keys) must order exactly as a stable sort by
// CollateCompare does: random strings over all of ASCII, control characters (ignorable
// at the first level), both cases and punctuation, with many ties and repeats.
namespace skillmcp {
namespace {

std::vector<std::string> ReferenceSort(std::vector<std::string> v) {
  std::stable_sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    return CollateCompare(a, b) < 0;
  });
  return v;
}

TEST(CollateSort, AsciiKeysSortExactlyAsTheComparator) {
  std::mt19937 rng(20261201);
  const std::string common = "aAbB-_./0 9\tzZ";
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> v(1 + rng() % 300);
    for (std::string& s : v) {
      size_t len = rng() % 12;
      for (size_t i = 0; i < len; ++i) {
        // Mostly a small alphabet (ties and shared prefixes), sometimes any ASCII byte.
        s.push_back(rng() % 4 ? common[rng() % common.size()] : static_cast<char>(rng() % 128));
      }
    }
    const std::vector<std::string> want = ReferenceSort(v);
    CollateSortStrings(v);
    ASSERT_EQ(v, want) << "round " << round;
  }
}

TEST(CollateSort, OneNonAsciiKeyTakesTheComparatorPath) {
  std::vector<std::string> v = {"b", "\xc3\xa9", "A", "a", "\001a", "e", "B"};
  const std::vector<std::string> want = ReferenceSort(v);
  CollateSortStrings(v);
  EXPECT_EQ(v, want);
  std::string key = "x";
  EXPECT_FALSE(AsciiPrimaryKey("caf\xc3\xa9", &key));
  EXPECT_EQ(key, "x");  // unchanged on refusal
  EXPECT_TRUE(AsciiPrimaryKey("a\001A", &key));
  EXPECT_EQ(key.size(), 3u);  // "x" + two weights; the control character is ignorable
  EXPECT_EQ(key[1], key[2]);  // both cases share a primary weight
}

}  // namespace
}  // namespace skillmcp
