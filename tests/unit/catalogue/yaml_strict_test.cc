#include "broker/catalogue/yaml_strict.h"

#include <gtest/gtest.h>

namespace skillmcp {
namespace {

TEST(YamlStrict, AcceptsPlainMapping) {
  StrictYaml y = LoadStrictYaml("a: 1\nb: [x, 'y']\nc: {d: e}\n");
  ASSERT_TRUE(y.ok) << y.error.message;
  EXPECT_EQ(y.root["b"][1].as<std::string>(), "y");
}

TEST(YamlStrict, RefusesAnchor) {
  StrictYaml y = LoadStrictYaml("a: &x 1\nb: 2\n");
  ASSERT_FALSE(y.ok);
  EXPECT_NE(y.error.message.find("anchor"), std::string::npos);
  EXPECT_EQ(y.error.line, 1);
}

TEST(YamlStrict, RefusesAlias) {
  StrictYaml y = LoadStrictYaml("a: &x 1\nb: *x\n");
  ASSERT_FALSE(y.ok);
  // The anchor is met first; an alias alone (undefined) is refused by the parser too.
  StrictYaml alias_only = LoadStrictYaml("a: [1]\nb: *x\n");
  EXPECT_FALSE(alias_only.ok);
}

TEST(YamlStrict, RefusesMergeKey) {
  StrictYaml y = LoadStrictYaml("base: {a: 1}\nother:\n  <<: {b: 2}\n  c: 3\n");
  ASSERT_FALSE(y.ok);
  EXPECT_NE(y.error.message.find("merge key"), std::string::npos);
  EXPECT_EQ(y.error.line, 3);
}

TEST(YamlStrict, QuotedMergeKeyIsAnOrdinaryKey) {
  StrictYaml y = LoadStrictYaml("\"<<\": 1\n");
  EXPECT_TRUE(y.ok) << y.error.message;
}

TEST(YamlStrict, RefusesExplicitTags) {
  EXPECT_FALSE(LoadStrictYaml("a: !!str 5\n").ok);
  EXPECT_FALSE(LoadStrictYaml("a: !custom x\n").ok);
}

TEST(YamlStrict, RefusesDuplicateKeys) {
  StrictYaml y = LoadStrictYaml("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(y.ok);
  EXPECT_NE(y.error.message.find("'a'"), std::string::npos);
  EXPECT_EQ(y.error.line, 3);
}

TEST(YamlStrict, RefusesComplexKeys) { EXPECT_FALSE(LoadStrictYaml("? [a, b]\n: 1\n").ok); }

TEST(YamlStrict, RefusesSecondDocument) { EXPECT_FALSE(LoadStrictYaml("a: 1\n--- \nb: 2\n").ok); }

TEST(YamlStrict, DeepFlowNestingRefusedBeforeParsing) {
  std::string deep(100000, '[');
  StrictYaml y = LoadStrictYaml("a: " + deep);
  ASSERT_FALSE(y.ok);
  EXPECT_NE(y.error.message.find("nested"), std::string::npos);
  EXPECT_EQ(y.error.line, 1);
  // The pre-scan itself names the place.
  auto e = CheckNestingDepth(deep, kMaxYamlNesting);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->column, kMaxYamlNesting + 1);
}

TEST(YamlStrict, DeepBlockNestingRefused) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  EXPECT_FALSE(LoadStrictYaml(text).ok);
  std::string dashes;
  for (int i = 0; i < 300; ++i) dashes += "- ";
  EXPECT_FALSE(LoadStrictYaml(dashes + "x\n").ok);
}

TEST(YamlStrict, BracketsInQuotesCommentsAndBlockScalarsDoNotCount) {
  std::string many(500, '[');
  std::string text = "a: '" + many + "'\nb: \"" + many + "\"\n# " + many + "\nc: |\n  " + many +
                     "\n    " + many + "\nd: x\n";
  StrictYaml y = LoadStrictYaml(text);
  ASSERT_TRUE(y.ok) << y.error.message;
  EXPECT_EQ(y.root["d"].as<std::string>(), "x");
}

TEST(YamlStrict, ModerateNestingAccepted) {
  std::string text = "a: " + std::string(50, '[') + std::string(50, ']') + "\n";
  EXPECT_TRUE(LoadStrictYaml(text).ok);
}

TEST(YamlStrict, SyntaxErrorCarriesParserPosition) {
  StrictYaml y = LoadStrictYaml("a: 1\nb: [1, 2\nc: d\n");
  ASSERT_FALSE(y.ok);
  EXPECT_GT(y.error.line, 1);
  EXPECT_GT(y.error.column, 0);
  EXPECT_EQ(DescribePosition(y.error, 1).rfind("line ", 0), 0u);
}

TEST(YamlStrict, CoreSchemaResolution) {
  StrictYaml y = LoadStrictYaml(
      "s1: yes\ns2: on\ns3: 'true'\nb: true\nB: FALSE\nn: ~\ne:\ni: -12\nh: 0x1F\no: 0o17\n"
      "f: 1.5\ninf: -.inf\nnan: .nan\nfs: 1.2.3\nbl: |\n  x\n");
  ASSERT_TRUE(y.ok) << y.error.message;
  EXPECT_EQ(ResolveCore(y.root["s1"]), CoreType::kString);  // YAML 1.1 boolean, 1.2 string
  EXPECT_EQ(ResolveCore(y.root["s2"]), CoreType::kString);
  EXPECT_EQ(ResolveCore(y.root["s3"]), CoreType::kString);
  EXPECT_EQ(ResolveCore(y.root["b"]), CoreType::kBool);
  EXPECT_EQ(ResolveCore(y.root["B"]), CoreType::kBool);
  EXPECT_EQ(ResolveCore(y.root["n"]), CoreType::kNull);
  EXPECT_EQ(ResolveCore(y.root["e"]), CoreType::kNull);
  EXPECT_EQ(ResolveCore(y.root["i"]), CoreType::kInt);
  EXPECT_EQ(ResolveCore(y.root["h"]), CoreType::kInt);
  EXPECT_EQ(ResolveCore(y.root["o"]), CoreType::kInt);
  EXPECT_EQ(ResolveCore(y.root["f"]), CoreType::kFloat);
  EXPECT_EQ(ResolveCore(y.root["inf"]), CoreType::kFloat);
  EXPECT_EQ(ResolveCore(y.root["nan"]), CoreType::kFloat);
  EXPECT_EQ(ResolveCore(y.root["fs"]), CoreType::kString);
  EXPECT_EQ(ResolveCore(y.root["bl"]), CoreType::kString);
  EXPECT_EQ(ResolveCore(y.root["missing"]), CoreType::kUndefined);
  EXPECT_EQ(*CoreNumber(y.root["h"]), 31.0);
  EXPECT_EQ(*CoreNumber(y.root["o"]), 15.0);
  EXPECT_EQ(*CoreNumber(y.root["i"]), -12.0);
}

}  // namespace
}  // namespace skillmcp
