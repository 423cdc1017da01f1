#include "shared/lines.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {
namespace {

std::vector<std::string> AllLines(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : Lines(text)) out.emplace_back(line);
  return out;
}

using V = std::vector<std::string>;

TEST(Lines, AFinalNewlineEndsTheLastLine) {
  EXPECT_EQ(AllLines(""), V{});
  EXPECT_EQ(AllLines("a"), V({"a"}));
  EXPECT_EQ(AllLines("a\n"), V({"a"}));
  EXPECT_EQ(AllLines("a\nb"), V({"a", "b"}));
  EXPECT_EQ(AllLines("a\nb\n"), V({"a", "b"}));
}

TEST(Lines, EmptyLinesAndCarriageReturnsStay) {
  EXPECT_EQ(AllLines("\n"), V({""}));
  EXPECT_EQ(AllLines("\n\n"), V({"", ""}));
  EXPECT_EQ(AllLines("a\n\nb\n\n"), V({"a", "", "b", ""}));
  EXPECT_EQ(AllLines("a\r\nb\r"), V({"a\r", "b\r"}));
}

TEST(Lines, ViewsIntoTheText) {
  const std::string text = "one\ntwo";
  auto it = Lines(text).begin();
  EXPECT_EQ(it->data(), text.data());
  ++it;
  EXPECT_EQ(it->data(), text.data() + 4);
  EXPECT_EQ(*it, "two");
  auto before = it++;
  EXPECT_EQ(*before, "two");
  EXPECT_EQ(it, Lines(text).end());
}

TEST(Lines, IteratorsOfTheSameTextCompare) {
  const std::string text = "a\nb\nc";
  Lines lines(text);
  auto a = lines.begin(), b = lines.begin();
  EXPECT_EQ(a, b);
  ++a;
  EXPECT_NE(a, b);
  ++b;
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::distance(lines.begin(), lines.end()), 3);
}

}  // namespace
}  // namespace skillmcp
