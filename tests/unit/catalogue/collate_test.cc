#include "broker/catalogue/collate.h"

#include <gtest/gtest.h>

namespace skillmcp {
namespace {

TEST(Collate, CaseInsensitiveAtFirstLevel) {
  std::vector<std::string> v = {"SKILL.md", "scripts/y.js", "references/x.md"};
  CollateSortStrings(v);
  EXPECT_EQ(v, (std::vector<std::string>{"references/x.md", "scripts/y.js", "SKILL.md"}));
  // Plain byte order would put the upper-case name first.
  EXPECT_LT(std::string("SKILL.md"), std::string("references/x.md"));
}

TEST(Collate, TiesBrokenByBytesSoOrderIsDeterministic) {
  EXPECT_NE(CollateCompare("Foo", "foo"), 0);
  EXPECT_LT(CollateCompare("Foo", "foo"), 0);  // 'F' < 'f' in bytes
  EXPECT_GT(CollateCompare("foo", "Foo"), 0);
  EXPECT_EQ(CollateCompare("foo", "foo"), 0);
  std::vector<std::string> a = {"foo", "Foo", "FOO"};
  std::vector<std::string> b = {"FOO", "foo", "Foo"};
  CollateSortStrings(a);
  CollateSortStrings(b);
  EXPECT_EQ(a, b);
}

TEST(Collate, AccentsAreSecondaryDifferences) {
  // Primary strength: é sorts with e, before f.
  EXPECT_LT(CollateCompare("\xC3\xA9t\xC3\xA9", "f"), 0);
  EXPECT_LT(CollateCompare("ete", "\xC3\xA9t\xC3\xA9"), 0);  // tie at primary, bytes decide
}

TEST(Collate, InvalidUtf8IsTotal) {
  EXPECT_NE(CollateCompare("a\xFF", "a\xFE"), 0);
  EXPECT_EQ(CollateCompare("a\xFF", "a\xFF"), 0);
}

}  // namespace
}  // namespace skillmcp
