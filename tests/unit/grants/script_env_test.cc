#include "broker/grants/script_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/unit/grants/fake_env.h"

namespace skillmcp {
namespace {

using testing::FakeEnv;
using Names = std::vector<std::string>;

TEST(ScriptEnv, AmbientFiveWhenSetAndNothingElse) {
  FakeEnv env;
  for (const char* name : {"TZ", "PATH", "HOME", "LANG", "TMPDIR"}) env.vars[name] = "x";
  env.vars["SECRET_OF_THE_SERVER"] = "value";
  env.vars["SKILLS_DIR"] = "/skills";
  env.vars["LD_PRELOAD"] = "/evil.so";
  ScriptEnv result = ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun);
  EXPECT_EQ(result.names, (Names{"HOME", "LANG", "PATH", "TMPDIR", "TZ"}));
  EXPECT_TRUE(result.not_set.empty());
  EXPECT_FALSE(result.warning.has_value());
}

TEST(ScriptEnv, UnsetAmbientIsAbsent) {
  FakeEnv env;
  env.vars["PATH"] = "/usr/bin";
  env.vars["HOME"] = "   ";      // blank: unset
  env.vars["LANG"] = "${LANG}";  // placeholder: unset
  ScriptEnv result = ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun);
  EXPECT_EQ(result.names, (Names{"PATH", "TMPDIR"}));  // TMPDIR: the run's scratch, always
  EXPECT_TRUE(result.not_set.empty());  // ambient names are never "not set" noise
}

TEST(ScriptEnv, DataDirOnlyWhenSet) {
  FakeEnv env;
  EXPECT_EQ(ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun).names, Names{"TMPDIR"});
  env.vars["MCP_DATA_DIR"] = "/data";
  EXPECT_EQ(ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun).names,
            (Names{"MCP_DATA_DIR", "TMPDIR"}));
}

TEST(ScriptEnv, EachProxyVariablePassesWhenSet) {
  for (std::string_view name : kProxyVariables) {
    FakeEnv env;
    EXPECT_EQ(ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun).names, Names{"TMPDIR"});
    env.vars[std::string(name)] = "http://127.0.0.1:3128";
    Names expected{std::string(name), "TMPDIR"};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(ComputeScriptEnv({}, env.is_set(), GrantSource::kSkillRun).names, expected)
        << name;
  }
  EXPECT_EQ(kProxyVariables.size(), 7u);
}

TEST(ScriptEnv, GrantedSetPassUnsetAreReported) {
  FakeEnv env;
  env.vars["PATH"] = "/usr/bin";
  env.vars["API_KEY"] = "k";
  env.vars["EMPTY_ONE"] = "";
  ScriptEnv result =
      ComputeScriptEnv({"MISSING", "API_KEY", "EMPTY_ONE"}, env.is_set(), GrantSource::kSkillRun);
  EXPECT_EQ(result.names, (Names{"API_KEY", "PATH", "TMPDIR"}));
  EXPECT_EQ(result.not_set, (Names{"EMPTY_ONE", "MISSING"}));
}

TEST(ScriptEnv, SortedByBytesWithoutRepeats) {
  FakeEnv env;
  for (const char* name :
       {"PATH", "HTTP_PROXY", "http_proxy", "NO_PROXY", "MCP_DATA_DIR", "a_lower", "Zed"}) {
    env.vars[name] = "v";
  }
  ScriptEnv result =
      ComputeScriptEnv({"a_lower", "Zed", "PATH", "Zed"}, env.is_set(), GrantSource::kSkillRun);
  EXPECT_EQ(result.names, (Names{"HTTP_PROXY", "MCP_DATA_DIR", "NO_PROXY", "PATH", "TMPDIR", "Zed",
                                 "a_lower", "http_proxy"}));
}

TEST(ScriptEnv, WarningOnlyInStandaloneDeclarationMode) {
  FakeEnv env;
  env.vars["GITHUB_TOKEN"] = "ghp";
  env.vars["UNITS"] = "metric";
  Names granted = {"GITHUB_TOKEN", "UNITS", "NOT_THERE"};
  ScriptEnv standalone = ComputeScriptEnv(granted, env.is_set(), GrantSource::kDeclaration);
  ASSERT_TRUE(standalone.warning.has_value());
  EXPECT_NE(standalone.warning->find("GITHUB_TOKEN"), std::string::npos);
  EXPECT_NE(standalone.warning->find("UNITS"), std::string::npos);
  EXPECT_EQ(standalone.warning->find("NOT_THERE"), std::string::npos);  // not handed over
  EXPECT_NE(standalone.warning->find("MCP_SKILL_RUN"), std::string::npos);

  EXPECT_FALSE(ComputeScriptEnv(granted, env.is_set(), GrantSource::kSkillRun).warning);
  EXPECT_FALSE(ComputeScriptEnv(granted, env.is_set(), GrantSource::kHostedDefault).warning);
  // Standalone but nothing handed over beyond the allowlist: nothing to warn about.
  EXPECT_FALSE(ComputeScriptEnv({"NOT_THERE"}, env.is_set(), GrantSource::kDeclaration).warning);
  EXPECT_FALSE(ComputeScriptEnv({}, env.is_set(), GrantSource::kDeclaration).warning);
}

TEST(NetworkNote, OnlyOnAFencedMachine) {
  FakeEnv open;
  open.vars["NO_PROXY"] = "localhost";
  EXPECT_FALSE(IsFencedNetwork(open.is_set()));
  EXPECT_FALSE(NetworkNote(open.is_set()).has_value());
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) {
    FakeEnv fenced;
    fenced.vars[name] = "http://127.0.0.1:8080";
    EXPECT_TRUE(IsFencedNetwork(fenced.is_set())) << name;
    std::optional<std::string> note = NetworkNote(fenced.is_set());
    ASSERT_TRUE(note.has_value());
    EXPECT_NE(note->find("403"), std::string::npos);
    EXPECT_NE(note->find("timeout"), std::string::npos);
  }
}

}  // namespace
}  // namespace skillmcp
