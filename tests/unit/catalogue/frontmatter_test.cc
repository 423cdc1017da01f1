#include "broker/catalogue/frontmatter.h"

#include <gtest/gtest.h>

#include "broker/catalogue/reasons.h"
#include "tests/unit/fuzz_corpus.h"

namespace skillmcp {
namespace {

bool HasIssue(const ParsedSkillMd& p, const char* reason, const std::string& needle = "") {
  for (const auto& i : p.issues) {
    if (std::string(i.reason) == reason && i.detail.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string AllIssues(const ParsedSkillMd& p) {
  std::string s;
  for (const auto& i : p.issues) s += std::string(i.reason) + ": " + i.detail + "\n";
  return s;
}

TEST(Frontmatter, ReadsFieldsAndBodyVerbatim) {
  std::string md =
      "---\nname: w\ndescription: Forecasts.\nwhen-to-use: When it rains.\n"
      "license: MIT\n---\n# Title\n\n  indented \r\nlast";
  ParsedSkillMd p = ParseSkillMd(md, false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_EQ(p.name, "w");
  EXPECT_EQ(p.description, "Forecasts.");
  EXPECT_EQ(p.when_to_use, "When it rains.");
  // Body: everything after the closing fence line and its line break.
  EXPECT_EQ(p.body, "# Title\n\n  indented \r\nlast");
  EXPECT_FALSE(p.body_truncated);
  EXPECT_FALSE(p.declaration_present);
  EXPECT_TRUE(p.issues.empty());
}

TEST(Frontmatter, BodyAtEndOfFileIsEmpty) {
  ParsedSkillMd p = ParseSkillMd("---\ndescription: d\n---", false);
  ASSERT_TRUE(p.servable);
  EXPECT_EQ(p.body, "");
}

TEST(Frontmatter, CrlfFencesAndBomAccepted) {
  ParsedSkillMd p = ParseSkillMd("\xEF\xBB\xBF---\r\ndescription: d\r\n---\r\nbody", false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_EQ(p.description, "d");
  EXPECT_EQ(p.body, "body");
}

TEST(Frontmatter, MissingOpeningFenceIsMalformed) {
  ParsedSkillMd p = ParseSkillMd("# Just markdown\n\nname: x\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "---"));
  EXPECT_FALSE(ParseSkillMd("", false).servable);
}

TEST(Frontmatter, UnterminatedFenceIsMalformed) {
  ParsedSkillMd p = ParseSkillMd("---\nname: x\ndescription: y\n# body without fence\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "never closed"));
}

TEST(Frontmatter, EmptyFrontmatterServesWithoutFields) {
  ParsedSkillMd p = ParseSkillMd("---\n---\nbody", false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_FALSE(p.description.has_value());
  EXPECT_EQ(p.body, "body");
}

TEST(Frontmatter, OverCapIsMalformed) {
  std::string big = "---\ndescription: d\nx: '" + std::string(kFrontmatterCap, 'a') + "'\n---\n";
  ParsedSkillMd p = ParseSkillMd(big, false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, std::to_string(kFrontmatterCap)));
  // Just under the cap is fine.
  std::string ok =
      "---\ndescription: d\nx: '" + std::string(kFrontmatterCap - 100, 'a') + "'\n---\n";
  EXPECT_TRUE(ParseSkillMd(ok, false).servable);
}

// A value of the wrong type counts as absent; the skill is still served, with no issue.
TEST(Frontmatter, NonStringDescriptionCountsAsAbsent) {
  for (std::string v : {"true", "42", "1.10", "[a, b]", "{a: b}", "", "null", "~"}) {
    ParsedSkillMd p = ParseSkillMd("---\ndescription: " + v + "\n---\nbody", false);
    ASSERT_TRUE(p.servable) << v << AllIssues(p);
    EXPECT_FALSE(p.description.has_value()) << v;
    EXPECT_TRUE(p.issues.empty()) << v << AllIssues(p);
    EXPECT_EQ(p.body, "body") << v;
  }
  ParsedSkillMd w = ParseSkillMd("---\ndescription: d\nwhen-to-use: 3\n---\n", false);
  ASSERT_TRUE(w.servable) << AllIssues(w);
  EXPECT_EQ(w.description, "d");
  EXPECT_FALSE(w.when_to_use.has_value());
}

TEST(Frontmatter, YesStaysAString) {
  ParsedSkillMd p = ParseSkillMd("---\ndescription: yes\nwhen-to-use: on\n---\n", false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_EQ(p.description, "yes");
  EXPECT_EQ(p.when_to_use, "on");
}

TEST(Frontmatter, SyntaxErrorOutsideDeclarationIsMalformedWithPosition) {
  ParsedSkillMd p = ParseSkillMd("---\nname: x\ndescription: [oops\n---\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "SKILL.md line ")) << AllIssues(p);
}

TEST(Frontmatter, AnchorOutsideDeclarationIsMalformed) {
  ParsedSkillMd p = ParseSkillMd("---\nname: &n x\ndescription: d\n---\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "anchor"));
}

TEST(Frontmatter, BrokenDeclarationCostsOnlyScripts) {
  std::string md =
      "---\nname: x\ndescription: Still listed.\nmcp-host:\n  version: 1\n  run: [oops\n"
      "when-to-use: later key\n---\nbody";
  ParsedSkillMd p = ParseSkillMd(md, false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_EQ(p.description, "Still listed.");
  EXPECT_EQ(p.when_to_use, "later key");
  EXPECT_TRUE(p.declaration_present);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(p.declaration.runs.empty());
  EXPECT_TRUE(HasIssue(p, reason::kDeclaration, "line ")) << AllIssues(p);
  EXPECT_EQ(p.body, "body");
}

TEST(Frontmatter, AnchorInsideDeclarationCostsOnlyScripts) {
  std::string md =
      "---\ndescription: d\nmcp-host:\n  version: 1\n  run:\n    - &e {script: a.js, "
      "interpreter: node}\n    - *e\n---\n";
  ParsedSkillMd p = ParseSkillMd(md, false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_FALSE(p.declaration.ok);
  // The anchor is on line 6 of SKILL.md.
  EXPECT_TRUE(HasIssue(p, reason::kDeclaration, "SKILL.md line 6")) << AllIssues(p);
}

TEST(Frontmatter, MergeKeyInsideDeclarationRefused) {
  std::string md =
      "---\ndescription: d\nmcp-host:\n  version: 1\n  run:\n    - <<: {interpreter: node}\n"
      "      script: a.js\n---\n";
  ParsedSkillMd p = ParseSkillMd(md, false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(HasIssue(p, reason::kDeclaration, "merge key")) << AllIssues(p);
}

TEST(Frontmatter, DeepNestingInsideDeclarationRefusedWithoutCrash) {
  std::string md =
      "---\ndescription: d\nmcp-host:\n  version: 1\n  egress: " + std::string(5000, '[') +
      "\n---\n";
  ParsedSkillMd p = ParseSkillMd(md, false);
  ASSERT_TRUE(p.servable) << AllIssues(p);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(HasIssue(p, reason::kDeclaration, "nested")) << AllIssues(p);
}

// The body is the UTF-8 decoding of the bytes read: a character cut by the cap ends it in
// one U+FFFD, whatever its length.
TEST(Frontmatter, TruncatedBodyCutInsideACharacterEndsInOneReplacement) {
  const std::string head = "---\ndescription: d\n---\nab";
  for (const std::string ch : {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}) {
    for (size_t keep = 1; keep < ch.size(); ++keep) {
      ParsedSkillMd p = ParseSkillMd(head + ch.substr(0, keep), true);
      ASSERT_TRUE(p.servable);
      EXPECT_TRUE(p.body_truncated);
      EXPECT_EQ(p.body, "ab\xEF\xBF\xBD") << ch.size() << " " << keep;
    }
    // Cut on a character boundary: nothing added.
    EXPECT_EQ(ParseSkillMd(head + ch, true).body, "ab" + ch);
  }
}

TEST(Frontmatter, InvalidUtf8FrontmatterIsMalformed) {
  ParsedSkillMd p = ParseSkillMd("---\ndescription: \xFF\xFE\n---\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "UTF-8"));
}

TEST(Frontmatter, ScalarFrontmatterIsMalformed) {
  ParsedSkillMd p = ParseSkillMd("---\njust a sentence\n---\n", false);
  EXPECT_FALSE(p.servable);
  EXPECT_TRUE(HasIssue(p, reason::kMalformedFrontmatter, "mapping"));
}

// The fuzz corpus replayed as an ordinary test: nothing in it may crash or hang.
TEST(Frontmatter, FuzzCorpusReplays) {
  size_t n = 0;
  for (const auto& [name, bytes] : ReadFuzzCorpus("frontmatter")) {
    ParsedSkillMd p = ParseSkillMd(bytes, false);
    EXPECT_TRUE(p.servable || !p.issues.empty()) << name;
    ++n;
  }
  EXPECT_GE(n, 12u);
}

}  // namespace
}  // namespace skillmcp
