#include "shared/egress_allowlist.h"

#include <gtest/gtest.h>

namespace skillmcp {
namespace {

std::vector<EgressPattern> Patterns(std::string_view text) {
  std::string error;
  auto parsed = ParseEgressPatterns(text, &error);
  EXPECT_TRUE(parsed.has_value()) << error;
  return parsed.value_or(std::vector<EgressPattern>{});
}

TEST(EgressHostTest, NamesAreLowerCasedWithoutTheirTrailingDot) {
  EXPECT_EQ(NormaliseEgressHost("API.Example.COM.", false), "api.example.com");
  EXPECT_EQ(NormaliseEgressHost("a-1.b", false), "a-1.b");
}

TEST(EgressHostTest, MalformedNamesAreRefused) {
  for (const char* bad : {"", ".", "a..b", "-a.com", "a-.com", "a_b.com", "a.com..", "exa mple.com",
                          "127.1", "10.0.0.300", "1.2.3", "a.123"}) {
    EXPECT_FALSE(NormaliseEgressHost(bad, true).has_value()) << bad;
  }
  EXPECT_FALSE(NormaliseEgressHost(std::string(64, 'a') + ".com", false).has_value());
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  long_name += "com";
  EXPECT_FALSE(NormaliseEgressHost(long_name, false).has_value());
}

TEST(EgressHostTest, WildcardsOnlyWhereAllowedAndNeverOverATopLevelName) {
  EXPECT_EQ(NormaliseEgressHost("*.Example.com", true), "*.example.com");
  EXPECT_FALSE(NormaliseEgressHost("*.example.com", false).has_value());
  EXPECT_FALSE(NormaliseEgressHost("*", true).has_value());
  EXPECT_FALSE(NormaliseEgressHost("*.com", true).has_value());
  EXPECT_FALSE(NormaliseEgressHost("a.*.com", true).has_value());
  EXPECT_FALSE(NormaliseEgressHost("*.*.com", true).has_value());
}

TEST(EgressHostTest, AddressLiteralsAreCanonical) {
  EXPECT_EQ(NormaliseEgressHost("10.0.0.1", false), "10.0.0.1");
  EXPECT_EQ(NormaliseEgressHost("2001:DB8:0:0::1", false), "2001:db8::1");
  EXPECT_TRUE(IsAddressLiteral("::1"));
  EXPECT_FALSE(IsAddressLiteral("example.com"));
}

TEST(EgressHostTest, AWildcardMatchesNamesUnderItAtAnyDepthButNotItself) {
  EXPECT_TRUE(EgressHostMatches("*.example.com", "api.example.com"));
  EXPECT_TRUE(EgressHostMatches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(EgressHostMatches("*.example.com", "example.com"));
  EXPECT_FALSE(EgressHostMatches("*.example.com", "badexample.com"));
  EXPECT_TRUE(EgressHostMatches("example.com", "example.com"));
  EXPECT_FALSE(EgressHostMatches("example.com", "api.example.com"));
}

TEST(EgressListTest, EntriesAreSplitAtCommasAndTrimmedOfBlanks) {
  using Entries = std::vector<std::string_view>;
  EXPECT_EQ(EgressListEntries(" a ,\tb\t,, c=d ,"), (Entries{"a", "b", "c=d"}));
  EXPECT_EQ(EgressListEntries("a"), (Entries{"a"}));
  EXPECT_TRUE(EgressListEntries("").empty());
  EXPECT_TRUE(EgressListEntries(" , \t ,").empty());
  // A blank inside an entry stays: the entry is its parser's to refuse.
  EXPECT_EQ(EgressListEntries(" a b "), (Entries{"a b"}));
}

TEST(EgressPatternTest, PortsBlanksAndBracketedAddresses) {
  std::vector<EgressPattern> p =
      Patterns(" api.example.com:8443 , *.cdn.net,,[::1]:9000, 10.0.0.1:80 ,::2");
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0], (EgressPattern{"api.example.com", 8443}));
  EXPECT_EQ(p[1], (EgressPattern{"*.cdn.net", std::nullopt}));
  EXPECT_EQ(p[2], (EgressPattern{"::1", 9000}));
  EXPECT_EQ(p[3], (EgressPattern{"10.0.0.1", 80}));
  EXPECT_EQ(p[4], (EgressPattern{"::2", std::nullopt}));
  EXPECT_TRUE(Patterns("").empty());
}

TEST(EgressPatternTest, EachBadEntryIsNamed) {
  for (const char* bad :
       {"a.com:0", "a.com:65536", "a.com:", "a.com:x", "[::1", "[::1]x", "*", "a..com", "[::1]:"}) {
    std::string error;
    EXPECT_FALSE(ParseEgressPatterns(std::string("ok.com,") + bad, &error).has_value()) << bad;
    EXPECT_NE(error.find(bad), std::string::npos) << error;
  }
}

TEST(EffectiveEgressTest, WithoutPatternsEveryValidDeclaredEntryOnTheDefaultPorts) {
  auto rules = EffectiveEgress({"API.example.com", "bad..name", "*.cdn.net", "api.example.com"},
                               std::nullopt);
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0], (EgressRule{"api.example.com", {80, 443}}));
  EXPECT_EQ(rules[1], (EgressRule{"*.cdn.net", {80, 443}}));
}

TEST(EffectiveEgressTest, AnEmptyPatternListAllowsNothing) {
  EXPECT_TRUE(EffectiveEgress({"api.example.com"}, std::vector<EgressPattern>{}).empty());
}

TEST(EffectiveEgressTest, PatternsNarrowNamesAndPorts) {
  auto rules = EffectiveEgress({"api.example.com", "other.org", "*.cdn.net"},
                               Patterns("*.example.com:8443,img.cdn.net"));
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0], (EgressRule{"api.example.com", {8443}}));
  EXPECT_EQ(rules[1], (EgressRule{"img.cdn.net", {80, 443}}));
}

TEST(EffectiveEgressTest, ADeclaredWildcardNeverWidensAnOperatorsName) {
  auto rules = EffectiveEgress({"*.example.com"}, Patterns("*.api.example.com,example.com"));
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].host, "*.api.example.com");
  rules = EffectiveEgress({"*.api.example.com"}, Patterns("*.example.com:443"));
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], (EgressRule{"*.api.example.com", {443}}));
}

TEST(EffectiveEgressTest, TwoPatternsForOneNameJoinTheirPorts) {
  auto rules =
      EffectiveEgress({"api.example.com"}, Patterns("api.example.com:8443,*.example.com:9443"));
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0], (EgressRule{"api.example.com", {8443, 9443}}));
}

TEST(EgressAllowsTest, NameAndPortMustBothMatch) {
  auto rules = EffectiveEgress({"api.example.com", "*.cdn.net"}, std::nullopt);
  EXPECT_TRUE(EgressAllows(rules, "api.example.com", 443));
  EXPECT_FALSE(EgressAllows(rules, "api.example.com", 22));
  EXPECT_TRUE(EgressAllows(rules, "img.cdn.net", 80));
  EXPECT_FALSE(EgressAllows(rules, "cdn.net", 443));
  EXPECT_FALSE(EgressAllows(rules, "example.com", 443));
  EXPECT_FALSE(EgressAllows({}, "api.example.com", 443));
}

}  // namespace
}  // namespace skillmcp
