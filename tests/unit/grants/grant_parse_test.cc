#include "broker/grants/grant_parse.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/fuzz_corpus.h"

namespace skillmcp {
namespace {

void ExpectRefused(const std::string& text, const std::string& mention = "") {
  GrantParseResult result = ParseSkillRunGrant(text);
  EXPECT_FALSE(result.ok) << text;
  EXPECT_TRUE(result.rows.empty()) << text;
  EXPECT_FALSE(result.error.empty()) << text;
  if (!mention.empty()) {
    EXPECT_NE(result.error.find(mention), std::string::npos) << result.error;
  }
}

TEST(GrantParse, NotAnArrayIsRefused) {
  ExpectRefused(R"({"skill": "a", "script": "s.js"})", "array");
  ExpectRefused(R"("a")", "array");
  ExpectRefused("42", "array");
  ExpectRefused("null", "array");
  ExpectRefused("true", "array");
}

TEST(GrantParse, InvalidJsonNamesThePosition) {
  ExpectRefused("[{\"skill\": ", "byte");
  ExpectRefused("", "byte");
  ExpectRefused("[] trailing", "byte");
}

TEST(GrantParse, RowThatIsNotAnObjectIsRefused) {
  ExpectRefused("[1]", "row 0");
  ExpectRefused(R"([{"skill": "a", "script": "s.js"}, "a/s.js"])", "row 1");
  ExpectRefused("[[]]", "row 0");
  ExpectRefused("[null]", "row 0");
}

TEST(GrantParse, SkillMustBeAString) {
  ExpectRefused(R"([{"script": "s.js"}])", "\"skill\"");
  ExpectRefused(R"([{"skill": 7, "script": "s.js"}])", "\"skill\"");
  ExpectRefused(R"([{"skill": null, "script": "s.js"}])", "\"skill\"");
  ExpectRefused(R"([{"skill": ["a"], "script": "s.js"}])", "\"skill\"");
}

TEST(GrantParse, ScriptMustBeAString) {
  ExpectRefused(R"([{"skill": "a"}])", "\"script\"");
  ExpectRefused(R"([{"skill": "a", "script": 1.5}])", "\"script\"");
  ExpectRefused(R"([{"skill": "a", "script": {}}])", "\"script\"");
}

TEST(GrantParse, EnvMustBeAListOfStrings) {
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "env": "KEY"}])", "\"env\"");
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "env": null}])", "\"env\"");
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "env": {"KEY": true}}])", "\"env\"");
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "env": ["KEY", 3]}])", "\"env\"");
}

// Decision: an unknown row key refuses the whole grant (a misspelt "env" would otherwise run
// the script without the variables the owner meant to give it).
TEST(GrantParse, UnknownRowKeyIsRefusedAndNamed) {
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "evn": ["KEY"]}])", "\"evn\"");
  ExpectRefused(R"([{"skill": "a", "script": "s.js", "comment": "x"}])", "\"comment\"");
}

TEST(GrantParse, OneBadRowRefusesTheGoodOnesToo) {
  GrantParseResult result =
      ParseSkillRunGrant(R"([{"skill": "a", "script": "s.js"}, {"skill": "b", "script": 2}])");
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.rows.empty());
}

TEST(GrantParse, EmptyListParsesAndGrantsNothing) {
  GrantParseResult result = ParseSkillRunGrant("[]");
  EXPECT_TRUE(result.ok);
  EXPECT_TRUE(result.rows.empty());
  EXPECT_TRUE(result.error.empty());
}

TEST(GrantParse, RowsAreReadInOrder) {
  GrantParseResult result = ParseSkillRunGrant(
      R"([{"skill": "weather", "script": "scripts/forecast.js", "env": ["API_KEY", "UNITS"]},
          {"script": "run.js", "skill": "other"},
          {"skill": "third", "script": "x.js", "env": []}])");
  ASSERT_TRUE(result.ok) << result.error;
  ASSERT_EQ(result.rows.size(), 3u);
  EXPECT_EQ(result.rows[0].skill, "weather");
  EXPECT_EQ(result.rows[0].script, "scripts/forecast.js");
  ASSERT_TRUE(result.rows[0].env.has_value());
  EXPECT_EQ(*result.rows[0].env, (std::vector<std::string>{"API_KEY", "UNITS"}));
  EXPECT_EQ(result.rows[1].skill, "other");
  EXPECT_FALSE(result.rows[1].env.has_value());
  ASSERT_TRUE(result.rows[2].env.has_value());
  EXPECT_TRUE(result.rows[2].env->empty());
}

TEST(GrantParse, OversizedValueIsRefusedUnread) {
  std::string big = "[" + std::string(kMaxGrantBytes, ' ') + "]";
  ExpectRefused(big, "larger");
}

TEST(GrantParse, DeepNestingIsAnErrorNotACrash) {
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  ExpectRefused(deep, "row 0");
  std::string open = std::string(500000, '[');
  ExpectRefused(open);
}

TEST(GrantParse, InvalidUtf8IsAnError) {
  ExpectRefused("[{\"skill\": \"\xff\", \"script\": \"s.js\"}]");
}

// The fuzz seed corpus replayed as an ordinary test: every seed returns, refusals grant
// nothing, and the seeds named for a valid shape parse.
TEST(GrantParse, FuzzCorpusReplays) {
  size_t seen = 0;
  for (const auto& [name, bytes] : ReadFuzzCorpus("grant")) {
    GrantParseResult result = ParseSkillRunGrant(bytes);
    const bool valid = name == "empty-list.json" || name == "one-row.json" ||
                       name == "two-rows.json" || name == "escaped-nul.json";
    EXPECT_EQ(result.ok, valid) << name << ": " << result.error;
    EXPECT_EQ(result.error.empty(), result.ok) << name;
    if (!result.ok) {
      EXPECT_TRUE(result.rows.empty()) << name;
    }
    ++seen;
  }
  EXPECT_GE(seen, 10u);
}

}  // namespace
}  // namespace skillmcp
