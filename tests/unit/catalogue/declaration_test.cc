#include "broker/catalogue/declaration.h"

#include <gtest/gtest.h>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/reasons.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::Issues;

// SKILL.md with the given mcp-host block (indented lines after `mcp-host:`).
ParsedSkillMd WithBlock(const std::string& block) {
  return ParseSkillMd("---\nname: s\ndescription: d\nmcp-host:\n" + block + "---\nbody", false);
}

bool HasDeclIssue(const ParsedSkillMd& p, const std::string& needle) {
  for (const auto& i : p.issues) {
    if (std::string(i.reason) == reason::kDeclaration &&
        i.detail.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(Declaration, FullExampleAccepted) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run:\n    - script: scripts/forecast.js\n      interpreter: node\n"
      "      env: [WEATHER_API_KEY]\n      timeout: 30\n  env:\n    - name: WEATHER_API_KEY\n"
      "      secret: true\n  egress: [api.weather.example]\n");
  ASSERT_TRUE(p.servable) << Issues(p);
  EXPECT_TRUE(p.issues.empty()) << Issues(p);
  ASSERT_TRUE(p.declaration.ok);
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  const DeclaredRun& r = p.declaration.runs[0];
  EXPECT_EQ(r.script, "scripts/forecast.js");
  EXPECT_EQ(r.interpreter, "node");
  EXPECT_EQ(r.env, std::vector<std::string>{"WEATHER_API_KEY"});
  EXPECT_EQ(r.timeout_ms, 30000);
  ASSERT_EQ(p.declaration.env.size(), 1u);
  EXPECT_EQ(p.declaration.env[0].name, "WEATHER_API_KEY");
  EXPECT_TRUE(p.declaration.env[0].secret);
  EXPECT_EQ(p.declaration.egress, std::vector<std::string>{"api.weather.example"});
}

TEST(Declaration, DefaultTimeout) {
  ParsedSkillMd p = WithBlock("  version: 1\n  run:\n    - {script: a.js, interpreter: node}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].timeout_ms, kDefaultTimeoutMs);
  EXPECT_TRUE(p.declaration.runs[0].env.empty());
}

TEST(Declaration, TimeoutClampedAndReported) {
  ParsedSkillMd p =
      WithBlock("  version: 1\n  run:\n    - {script: a.js, interpreter: node, timeout: 900}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].timeout_ms, kMaxTimeoutMs);
  EXPECT_TRUE(HasDeclIssue(p, "clamped")) << Issues(p);
  ParsedSkillMd frac =
      WithBlock("  version: 1\n  run:\n    - {script: a.js, interpreter: node, timeout: 1.5}\n");
  EXPECT_EQ(frac.declaration.runs[0].timeout_ms, 1500);
}

TEST(Declaration, BadTimeoutFallsBackToDefaultAndIsReported) {
  for (std::string t : {"-5", "0", "'30'", "[1]", ".nan"}) {
    ParsedSkillMd p = WithBlock(
        "  version: 1\n  run:\n    - {script: a.js, interpreter: node, "
        "timeout: " +
        t + "}\n");
    ASSERT_EQ(p.declaration.runs.size(), 1u) << t;
    EXPECT_EQ(p.declaration.runs[0].timeout_ms, kDefaultTimeoutMs) << t;
    EXPECT_TRUE(HasDeclIssue(p, "`timeout`")) << t << Issues(p);
  }
}

TEST(Declaration, UnknownMajorVersionRefusedWholesale) {
  ParsedSkillMd p = WithBlock("  version: 2\n  run:\n    - {script: a.js, interpreter: node}\n");
  ASSERT_TRUE(p.servable);
  EXPECT_TRUE(p.declaration_present);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(p.declaration.runs.empty());
  EXPECT_TRUE(HasDeclIssue(p, "version 2")) << Issues(p);
}

// `version` must be the integer 1 (docs/wire.md §5): anything else is an
// unknown version, so the block is refused wholesale.
TEST(Declaration, VersionForms) {
  auto ok = [](const std::string& v) {
    return WithBlock("  version: " + v + "\n  run: []\n").declaration.ok;
  };
  EXPECT_TRUE(ok("1"));
  EXPECT_TRUE(ok("+1"));  // the core schema's integer 1
  EXPECT_TRUE(ok("0x1"));
  EXPECT_FALSE(ok("1.3"));
  EXPECT_FALSE(ok("1.5"));
  EXPECT_FALSE(ok("1.0"));
  EXPECT_FALSE(ok("\"1\""));
  EXPECT_FALSE(ok("'1.0'"));
  EXPECT_FALSE(ok("\"2\""));
  EXPECT_FALSE(ok("2"));
  EXPECT_FALSE(ok("2.0"));
  EXPECT_FALSE(ok("one"));
  EXPECT_FALSE(ok("true"));
  EXPECT_FALSE(ok("-1"));
  EXPECT_FALSE(ok("0"));
  EXPECT_FALSE(ok("null"));
  EXPECT_FALSE(ok("~"));
  EXPECT_FALSE(ok(""));
  EXPECT_FALSE(ok("1e0"));
  EXPECT_FALSE(ok("[1]"));
  EXPECT_FALSE(ok("18446744073709551617"));  // over 64 bits
  EXPECT_FALSE(ok("18446744073709551616"));
  EXPECT_FALSE(ok("0x10000000000000001"));
  EXPECT_FALSE(ok("100000000000000000000000000000001"));
}

TEST(Declaration, UnknownVersionIsNamedInTheProblem) {
  ParsedSkillMd quoted = WithBlock("  version: \"1\"\n  run: []\n");
  EXPECT_TRUE(HasDeclIssue(quoted, "version '1' (a string)")) << Issues(quoted);
  ParsedSkillMd null = WithBlock("  version: null\n  run: []\n");
  EXPECT_TRUE(HasDeclIssue(null, "version null")) << Issues(null);
  ParsedSkillMd half = WithBlock("  version: 1.5\n  run: []\n");
  EXPECT_TRUE(HasDeclIssue(half, "version 1.5")) << Issues(half);
}

TEST(Declaration, MissingVersionRefused) {
  // No version at all: refused (an unknown major).
  ParsedSkillMd none = WithBlock("  run: []\n");
  EXPECT_FALSE(none.declaration.ok);
  EXPECT_TRUE(HasDeclIssue(none, "no `version`"));
}

TEST(Declaration, NotAMappingRefused) {
  ParsedSkillMd p = WithBlock("  - version: 1\n");
  ASSERT_TRUE(p.servable);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(HasDeclIssue(p, "must be a mapping"));
}

TEST(Declaration, UnknownKeysIgnoredAndNamed) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  colour: blue\n  run:\n    - script: a.js\n      interpreter: node\n"
      "      shell: bash\n");
  ASSERT_TRUE(p.declaration.ok) << Issues(p);
  EXPECT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_TRUE(HasDeclIssue(p, "'colour' (line 6)")) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "'run[0].shell'")) << Issues(p);
}

TEST(Declaration, YesIsAStringScript) {
  ParsedSkillMd p = WithBlock("  version: 1\n  run:\n    - {script: yes, interpreter: node}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u) << Issues(p);
  EXPECT_EQ(p.declaration.runs[0].script, "yes");
}

TEST(Declaration, NonStringScriptDropped) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run:\n    - {script: 42, interpreter: node}\n    - {script: [a], "
      "interpreter: node}\n    - {interpreter: node}\n    - {script: ok.js, interpreter: node}\n");
  ASSERT_TRUE(p.declaration.ok);
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].script, "ok.js");
  EXPECT_TRUE(HasDeclIssue(p, "run entry 1")) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "run entry 2")) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "run entry 3")) << Issues(p);
}

TEST(Declaration, UncontainedScriptPathDropped) {
  for (std::string s :
       {"../x.js", "/etc/passwd", "a/./b.js", "a\\\\b.js", "a%2e.js", "a//b.js", "' '"}) {
    ParsedSkillMd p =
        WithBlock("  version: 1\n  run:\n    - {script: " + s + ", interpreter: node}\n");
    EXPECT_TRUE(p.declaration.ok) << s;
    EXPECT_TRUE(p.declaration.runs.empty()) << s << Issues(p);
    EXPECT_TRUE(HasDeclIssue(p, "is refused")) << s << Issues(p);
  }
}

TEST(Declaration, OtherInterpreterKept) {
  ParsedSkillMd p = WithBlock("  version: 1\n  run:\n    - {script: a.py, interpreter: python}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].interpreter, "python");
}

TEST(Declaration, MissingInterpreterDropped) {
  ParsedSkillMd p = WithBlock("  version: 1\n  run:\n    - {script: a.js}\n");
  EXPECT_TRUE(p.declaration.runs.empty());
  EXPECT_TRUE(HasDeclIssue(p, "`interpreter`"));
}

TEST(Declaration, DuplicateScriptKeepsFirst) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run:\n    - {script: a.js, interpreter: node, timeout: 5}\n"
      "    - {script: a.js, interpreter: node, timeout: 9}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].timeout_ms, 5000);
  EXPECT_TRUE(HasDeclIssue(p, "declared twice"));
}

TEST(Declaration, ReservedVariablesDroppedAndReported) {
  const std::vector<std::string> reserved = {"MCP_SKILLS_PATH",
                                             "MCP_SKILL_RUN",
                                             "SKILLS_DIR",
                                             "MCP_HOST_METER_FILE",
                                             "MCP_BLOB_BASE_URL",
                                             "MCP_BLOB_SIGNING_KEY",
                                             "NODE_OPTIONS",
                                             "LD_PRELOAD",
                                             "LD_LIBRARY_PATH",
                                             "NODE_REPL_EXTERNAL_MODULE",
                                             "MCP_CONFIRM_SECRET",
                                             "MCP_CONFIRM_MODE",
                                             "MCP_CONFIRM_ANYTHING",
                                             "MCP_SKILL_ALLOW_UNSCRUBBED",
                                             "CREDENTIALS_DIRECTORY",
                                             "SKILL_MCP_NODE",
                                             "SKILL_MCP_LIMIT_NPROC",
                                             "SKILL_MCP_NAMESPACES"};
  std::string list = "OK_VAR";
  for (const auto& r : reserved) list += ", " + r;
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run:\n    - {script: a.js, interpreter: node, "
      "env: [" +
      list + "]}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u) << Issues(p);
  EXPECT_EQ(p.declaration.runs[0].env, std::vector<std::string>{"OK_VAR"});
  for (const auto& r : reserved) {
    EXPECT_TRUE(IsReservedVariable(r)) << r;
    EXPECT_TRUE(HasDeclIssue(p, "'" + r + "'")) << r << Issues(p);
  }
  EXPECT_FALSE(IsReservedVariable("MCP_CONFIRM"));
  EXPECT_FALSE(IsReservedVariable("SKILL_MCP"));
  EXPECT_FALSE(IsReservedVariable("ld_preload_x"));
}

TEST(Declaration, ReservedVariableDroppedFromServerEnvProposal) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  env:\n    - {name: MCP_CONFIRM_SECRET, secret: true}\n"
      "    - {name: PUBLIC_URL, secret: false}\n");
  ASSERT_EQ(p.declaration.env.size(), 1u);
  EXPECT_EQ(p.declaration.env[0].name, "PUBLIC_URL");
  EXPECT_FALSE(p.declaration.env[0].secret);
  EXPECT_TRUE(HasDeclIssue(p, "MCP_CONFIRM_SECRET"));
}

TEST(Declaration, BadVariableNamesDropped) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run:\n    - {script: a.js, interpreter: node, "
      "env: ['A=B', 1X, 7, GOOD]}\n");
  ASSERT_EQ(p.declaration.runs.size(), 1u);
  EXPECT_EQ(p.declaration.runs[0].env, std::vector<std::string>{"GOOD"});
}

// Egress entries are host patterns (^[A-Za-z0-9.*-]+$), kept verbatim once each; any
// other entry is dropped with one issue of its own.
TEST(Declaration, EgressHostPatternsDeduplicated) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  egress: ['*.Example.com', 'host:8443', 5, api-1.x.io, '*.Example.com',"
      " 'a b', '', 'h\xC3\xA9.io']\n");
  ASSERT_TRUE(p.declaration.ok);
  EXPECT_EQ(p.declaration.egress, (std::vector<std::string>{"*.Example.com", "api-1.x.io"}));
  EXPECT_EQ(p.declaration.issues.size(), 5u) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "'host:8443'")) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "'a b'")) << Issues(p);
}

TEST(Declaration, NonBooleanSecretTreatedAsSecret) {
  ParsedSkillMd p = WithBlock("  version: 1\n  env:\n    - {name: K, secret: no}\n");
  ASSERT_EQ(p.declaration.env.size(), 1u);
  EXPECT_TRUE(p.declaration.env[0].secret);  // `no` is a string in YAML 1.2
  EXPECT_TRUE(HasDeclIssue(p, "treated as secret"));
}

TEST(Declaration, ParserPositionInDetail) {
  ParsedSkillMd p = WithBlock("  version: 1\n  run:\n    - {script: a.js\n");
  ASSERT_TRUE(p.servable) << Issues(p);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(HasDeclIssue(p, "SKILL.md line ")) << Issues(p);
  EXPECT_TRUE(HasDeclIssue(p, "column ")) << Issues(p);
}

TEST(Declaration, DuplicateKeyInsideBlockRefused) {
  ParsedSkillMd p = WithBlock(
      "  version: 1\n  run: []\n  run:\n    - {script: a.js, "
      "interpreter: node}\n");
  ASSERT_TRUE(p.servable);
  EXPECT_FALSE(p.declaration.ok);
  EXPECT_TRUE(HasDeclIssue(p, "'run' appears twice"));
}

}  // namespace
}  // namespace skillmcp
