#include "broker/grants/grants.h"

#include <gtest/gtest.h>

#include <string>

#include "broker/grants/grant_json.h"
#include "tests/unit/grants/fake_env.h"

namespace skillmcp {
namespace {

using testing::FakeEnv;

DeclaredRun Declared(std::string script, std::string interpreter, std::vector<std::string> env = {},
                     int64_t timeout_ms = 60000) {
  return DeclaredRun{std::move(script), std::move(interpreter), std::move(env), timeout_ms};
}

Skill MakeSkill(std::string name, std::vector<DeclaredRun> runs, bool declaration_ok = true) {
  Skill skill;
  skill.name = std::move(name);
  skill.source = "/skills/" + skill.name;
  skill.declaration_present = true;
  skill.declaration_ok = declaration_ok;
  skill.runs = std::move(runs);
  return skill;
}

// weather: two node scripts (one asks for variables) and one python script.
// notes: no declaration.
Catalogue MakeCatalogue() {
  Catalogue catalogue;
  catalogue.skills.push_back(MakeSkill(
      "weather", {Declared("scripts/forecast.js", "node", {"WEATHER_API_KEY", "UNITS"}, 30000),
                  Declared("scripts/geo.js", "node"), Declared("scripts/plot.py", "python")}));
  Skill notes = MakeSkill("notes", {});
  notes.declaration_present = false;
  notes.declaration_ok = false;
  catalogue.skills.push_back(std::move(notes));
  return catalogue;
}

std::vector<std::string> ScriptNames(const SkillGrants& grants) {
  std::vector<std::string> names;
  for (const auto& script : grants.scripts) names.push_back(script.script);
  return names;
}

std::vector<std::string> NoteNames(const std::vector<ScriptNote>& notes) {
  std::vector<std::string> names;
  for (const auto& note : notes) names.push_back(note.script);
  return names;
}

bool HasGrantProblem(const GrantDecision& decision, const std::string& mention) {
  for (const Problem& problem : decision.problems) {
    if (problem.reason == "grant" && problem.detail.find(mention) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(Hosted, EachMarkerAloneMeansHosted) {
  for (std::string_view marker : kHostedMarkers) {
    FakeEnv env;
    env.vars[std::string(marker)] = "/somewhere";
    EXPECT_TRUE(IsHosted(env.get())) << marker;
  }
  FakeEnv none;
  none.vars["SKILLS_DIR"] = "/skills";
  none.vars["PATH"] = "/usr/bin";
  EXPECT_FALSE(IsHosted(none.get()));
}

// A marker counts only when set, as the reference reads it: blank, "undefined", "null"
// and an unexpanded placeholder are unset, so the declaration stands.
TEST(Hosted, UnsetLookingMarkerIsNotHosted) {
  for (const char* value : {"", "  ", "undefined", " null ", "${MCP_SKILLS_PATH}"}) {
    for (std::string_view marker : kHostedMarkers) {
      FakeEnv env;
      env.vars[std::string(marker)] = value;
      EXPECT_FALSE(IsHosted(env.get())) << marker << "=" << value;
      Catalogue catalogue = MakeCatalogue();
      GrantDecision decision = DecideGrants(catalogue, env.get());
      EXPECT_EQ(decision.from, GrantSource::kDeclaration) << marker << "=" << value;
    }
  }
  FakeEnv real;
  real.vars["MCP_DATA_DIR"] = "undefined-dir";  // only the exact words count as unset
  EXPECT_TRUE(IsHosted(real.get()));
}

TEST(Decision, StandaloneDeclarationStands) {
  FakeEnv env;
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, env.get());
  EXPECT_EQ(decision.from, GrantSource::kDeclaration);
  EXPECT_EQ(GrantSourceName(decision.from), "declaration");
  EXPECT_FALSE(decision.note.has_value());
  EXPECT_FALSE(decision.error.has_value());
  EXPECT_TRUE(decision.problems.empty());
  ASSERT_EQ(decision.skills.size(), 2u);
  const SkillGrants& weather = decision.skills[0];
  EXPECT_EQ(ScriptNames(weather),
            (std::vector<std::string>{"scripts/forecast.js", "scripts/geo.js"}));
  EXPECT_EQ(weather.scripts[0].env, (std::vector<std::string>{"WEATHER_API_KEY", "UNITS"}));
  EXPECT_EQ(weather.scripts[0].timeout_ms, 30000);
  EXPECT_EQ(weather.scripts[0].interpreter, "node");
  EXPECT_EQ(NoteNames(weather.unavailable), (std::vector<std::string>{"scripts/plot.py"}));
  EXPECT_TRUE(weather.ungranted.empty());
  EXPECT_TRUE(weather.executable());
  EXPECT_FALSE(decision.skills[1].executable());
  EXPECT_TRUE(decision.skills[1].unavailable.empty());
}

TEST(Decision, HostedDefaultGrantsNothingAndSaysSo) {
  FakeEnv env;
  env.vars["MCP_HOST_METER_FILE"] = "/run/meter";
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, env.get());
  EXPECT_EQ(decision.from, GrantSource::kHostedDefault);
  EXPECT_EQ(GrantSourceName(decision.from), "hosted-default");
  ASSERT_TRUE(decision.note.has_value());
  EXPECT_NE(decision.note->find("MCP_SKILL_RUN"), std::string::npos);
  const SkillGrants& weather = decision.skills[0];
  EXPECT_TRUE(weather.scripts.empty());
  EXPECT_FALSE(weather.executable());
  EXPECT_EQ(NoteNames(weather.ungranted),
            (std::vector<std::string>{"scripts/forecast.js", "scripts/geo.js"}));
  EXPECT_EQ(NoteNames(weather.unavailable), (std::vector<std::string>{"scripts/plot.py"}));
  ScriptLookup lookup = decision.Lookup("weather", "scripts/geo.js");
  EXPECT_EQ(lookup.refusal, ScriptRefusal::kUngranted);
  EXPECT_NE(lookup.message.find("MCP_SKILL_RUN"), std::string::npos);
}

TEST(Decision, SkillRunWinsOverHostedAndIntersects) {
  FakeEnv env;
  env.vars["MCP_SKILLS_PATH"] = "/slots";
  env.vars["MCP_SKILL_RUN"] = R"([
      {"skill": "weather", "script": "scripts/forecast.js", "env": ["UNITS", "GITHUB_TOKEN"]}])";
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, env.get());
  EXPECT_EQ(decision.from, GrantSource::kSkillRun);
  EXPECT_EQ(GrantSourceName(decision.from), "MCP_SKILL_RUN");
  EXPECT_FALSE(decision.note.has_value());
  EXPECT_FALSE(decision.error.has_value());
  const SkillGrants& weather = decision.skills[0];
  ASSERT_EQ(ScriptNames(weather), (std::vector<std::string>{"scripts/forecast.js"}));
  // Asked for and granted: UNITS. Granted but never asked for: GITHUB_TOKEN (not passed).
  // Asked for but not granted: WEATHER_API_KEY (not passed).
  EXPECT_EQ(weather.scripts[0].env, (std::vector<std::string>{"UNITS"}));
  EXPECT_TRUE(HasGrantProblem(decision, "GITHUB_TOKEN"));
  EXPECT_EQ(NoteNames(weather.ungranted), (std::vector<std::string>{"scripts/geo.js"}));
  EXPECT_EQ(NoteNames(weather.unavailable), (std::vector<std::string>{"scripts/plot.py"}));
}

TEST(Decision, RowWithoutEnvGrantsTheScriptButNoVariables) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue, std::string(R"([{"skill": "weather", "script": "scripts/forecast.js"}])"), false);
  ASSERT_EQ(decision.skills[0].scripts.size(), 1u);
  EXPECT_TRUE(decision.skills[0].scripts[0].env.empty());
  EXPECT_TRUE(decision.problems.empty());
}

TEST(Decision, EnvKeepsDeclarationOrderAcrossRows) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue,
      std::string(R"([{"skill": "weather", "script": "scripts/forecast.js", "env": ["UNITS"]},
                      {"skill": "weather", "script": "scripts/forecast.js",
                       "env": ["WEATHER_API_KEY", "UNITS"]}])"),
      false);
  ASSERT_EQ(decision.skills[0].scripts.size(), 1u);
  EXPECT_EQ(decision.skills[0].scripts[0].env,
            (std::vector<std::string>{"WEATHER_API_KEY", "UNITS"}));
}

TEST(Decision, UndeclaredRowGrantsNothingAndIsAGrantProblem) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue, std::string(R"([{"skill": "weather", "script": "scripts/evil.js"}])"), false);
  EXPECT_FALSE(decision.skills[0].executable());
  ASSERT_EQ(decision.problems.size(), 1u);
  EXPECT_EQ(decision.problems[0].reason, "grant");
  EXPECT_NE(decision.problems[0].detail.find("scripts/evil.js"), std::string::npos);
  EXPECT_NE(decision.problems[0].detail.find("scripts/forecast.js"), std::string::npos);
  EXPECT_EQ(decision.Lookup("weather", "scripts/evil.js").refusal, ScriptRefusal::kUndeclared);
}

TEST(Decision, RowForUnknownSkillIsAGrantProblem) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue, std::string(R"([{"skill": "ghost", "script": "scripts/forecast.js"}])"), false);
  ASSERT_EQ(decision.problems.size(), 1u);
  EXPECT_EQ(decision.problems[0].reason, "grant");
  EXPECT_NE(decision.problems[0].detail.find("ghost"), std::string::npos);
  EXPECT_FALSE(decision.skills[0].executable());
}

// Grants key on the directory name only: another spelling of the skill grants nothing.
TEST(Decision, GrantKeysOnTheDirectoryName) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue, std::string(R"([{"skill": "Weather", "script": "scripts/geo.js"}])"), false);
  EXPECT_FALSE(decision.skills[0].executable());
  EXPECT_TRUE(HasGrantProblem(decision, "Weather"));
}

TEST(Decision, GrantForARefusedDeclarationGrantsNothing) {
  Catalogue catalogue;
  catalogue.skills.push_back(
      MakeSkill("broken", {Declared("scripts/a.js", "node", {"KEY"})}, /*declaration_ok=*/false));
  GrantDecision decision = DecideGrants(
      catalogue, std::string(R"([{"skill": "broken", "script": "scripts/a.js"}])"), false);
  EXPECT_FALSE(decision.skills[0].executable());
  EXPECT_TRUE(decision.skills[0].unavailable.empty());
  EXPECT_TRUE(decision.skills[0].ungranted.empty());
  EXPECT_TRUE(HasGrantProblem(decision, "scripts/a.js"));
  // Standalone, too: a refused declaration has no scripts.
  GrantDecision standalone = DecideGrants(catalogue, std::nullopt, false);
  EXPECT_FALSE(standalone.skills[0].executable());
  ScriptLookup lookup = standalone.Lookup("broken", "scripts/a.js");
  EXPECT_EQ(lookup.refusal, ScriptRefusal::kUndeclared);
  EXPECT_NE(lookup.message.find("none"), std::string::npos);
}

TEST(Decision, UnparsableGrantGrantsNothingEvenStandalone) {
  FakeEnv env;
  env.vars["MCP_SKILL_RUN"] = R"({"skill": "weather"})";
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, env.get());
  EXPECT_EQ(decision.from, GrantSource::kSkillRun);
  ASSERT_TRUE(decision.error.has_value());
  EXPECT_FALSE(decision.error->empty());
  EXPECT_FALSE(decision.skills[0].executable());
  EXPECT_EQ(NoteNames(decision.skills[0].ungranted),
            (std::vector<std::string>{"scripts/forecast.js", "scripts/geo.js"}));
  EXPECT_NE(decision.skills[0].ungranted[0].reason.find("grantError"), std::string::npos);
}

TEST(Decision, EmptyGrantListGrantsNothing) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, std::string("[]"), false);
  EXPECT_EQ(decision.from, GrantSource::kSkillRun);
  EXPECT_FALSE(decision.error.has_value());
  EXPECT_FALSE(decision.skills[0].executable());
  EXPECT_EQ(decision.skills[0].ungranted.size(), 2u);
}

// docs/wire.md: blank values and placeholders count as unset, so a blank MCP_SKILL_RUN falls
// back to the marker rule (here: hosted, so still closed).
TEST(Decision, BlankSkillRunIsUnset) {
  FakeEnv env;
  env.vars["MCP_SKILL_RUN"] = "   ";
  env.vars["MCP_BLOB_BASE_URL"] = "https://blob";
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, env.get());
  EXPECT_EQ(decision.from, GrantSource::kHostedDefault);
}

TEST(Lookup, RefusalsInWireOrder) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(
      catalogue,
      std::string(R"([{"skill": "weather", "script": "scripts/forecast.js", "env": ["UNITS"]},
                      {"skill": "weather", "script": "scripts/plot.py"}])"),
      false);
  ScriptLookup unknown = decision.Lookup("nope", "scripts/forecast.js");
  EXPECT_EQ(unknown.refusal, ScriptRefusal::kUnknownSkill);
  EXPECT_FALSE(unknown.script.has_value());

  ScriptLookup undeclared = decision.Lookup("weather", "scripts/other.js");
  EXPECT_EQ(undeclared.refusal, ScriptRefusal::kUndeclared);
  EXPECT_NE(undeclared.message.find("declared"), std::string::npos);
  for (const char* name : {"scripts/forecast.js", "scripts/geo.js", "scripts/plot.py"}) {
    EXPECT_NE(undeclared.message.find(name), std::string::npos) << name;
  }

  EXPECT_EQ(decision.Lookup("weather", "scripts/geo.js").refusal, ScriptRefusal::kUngranted);

  ScriptLookup python = decision.Lookup("weather", "scripts/plot.py");
  EXPECT_EQ(python.refusal, ScriptRefusal::kInterpreterUnavailable);

  ScriptLookup ok = decision.Lookup("weather", "scripts/forecast.js");
  EXPECT_EQ(ok.refusal, ScriptRefusal::kNone);
  ASSERT_TRUE(ok.script.has_value());
  EXPECT_EQ(ok.script->env, (std::vector<std::string>{"UNITS"}));
  EXPECT_EQ(ok.script->timeout_ms, 30000);
}

// The unavailable sentence in skill_list and skill_run's refusal are the same words.
TEST(Lookup, InterpreterSentenceIsIdenticalInListAndRun) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, std::nullopt, false);
  ASSERT_EQ(decision.skills[0].unavailable.size(), 1u);
  ScriptLookup lookup = decision.Lookup("weather", "scripts/plot.py");
  EXPECT_EQ(lookup.refusal, ScriptRefusal::kInterpreterUnavailable);
  EXPECT_EQ(lookup.message, decision.skills[0].unavailable[0].reason);
  EXPECT_EQ(lookup.message, InterpreterUnavailableReason("python"));
  EXPECT_NE(lookup.message.find("python"), std::string::npos);
  EXPECT_NE(lookup.message.find("node"), std::string::npos);
}

// The set is the deployment's: a python3 declaration runs where python3 is in it, and the
// sentence names the set where it is not.
TEST(Lookup, TheSetComesFromConfiguration) {
  const std::vector<std::string> both = {"node", "python3"};
  EXPECT_TRUE(IsRunnableInterpreter("python3", both));
  EXPECT_FALSE(IsRunnableInterpreter("python3"));
  EXPECT_FALSE(IsRunnableInterpreter("python", both));
  EXPECT_EQ(InterpreterUnavailableReason("python", both),
            "The declared interpreter \"python\" is not available: this deployment runs scripts "
            "only with {node, python3}. The skill's instructions and files still serve.");
  // The default is the sentence a node-only server has always given.
  EXPECT_EQ(InterpreterUnavailableReason("python3"),
            "The declared interpreter \"python3\" is not available: this deployment runs scripts "
            "only with {node}. The skill's instructions and files still serve.");
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision = DecideGrants(catalogue, std::nullopt, false, {"node", "python"});
  EXPECT_TRUE(decision.skills[0].unavailable.empty());
  EXPECT_EQ(decision.Lookup("weather", "scripts/plot.py").refusal, ScriptRefusal::kNone);
}

TEST(Lookup, InterpreterIsNeverInferred) {
  EXPECT_TRUE(IsRunnableInterpreter("node"));
  EXPECT_FALSE(IsRunnableInterpreter("Node"));
  EXPECT_FALSE(IsRunnableInterpreter("/usr/bin/node"));
  EXPECT_FALSE(IsRunnableInterpreter("bash"));
  EXPECT_FALSE(IsRunnableInterpreter(""));
}

TEST(GrantJson, SkillFieldsInWireOrder) {
  Catalogue catalogue = MakeCatalogue();
  GrantDecision decision =
      DecideGrants(catalogue, std::string(R"([{"skill": "weather", "script": "scripts/forecast.js",
                                  "env": ["UNITS"]}])"),
                   false);
  nlohmann::ordered_json entry;
  entry["bytes"] = 1;
  AppendSkillGrantFields(entry, decision.skills[0]);
  EXPECT_EQ(entry.dump(), R"({"bytes":1,"executable":true,)"
                          R"("scripts":[{"script":"scripts/forecast.js","interpreter":"node",)"
                          R"("timeoutMs":30000,"env":["UNITS"]}],)"
                          R"("unavailableScripts":[{"script":"scripts/plot.py","reason":)" +
                              nlohmann::json(InterpreterUnavailableReason("python")).dump() +
                              R"(}],"ungrantedScripts":[{"script":"scripts/geo.js","reason":)" +
                              nlohmann::json(decision.skills[0].ungranted[0].reason).dump() +
                              "}]}");

  nlohmann::ordered_json notes;
  AppendSkillGrantFields(notes, decision.skills[1]);
  EXPECT_EQ(notes.dump(), R"({"executable":false,"scripts":[],"unavailableScripts":[]})");
}

TEST(GrantJson, CatalogueFields) {
  Catalogue catalogue = MakeCatalogue();
  nlohmann::ordered_json standalone;
  AppendCatalogueGrantFields(standalone, DecideGrants(catalogue, std::nullopt, false));
  EXPECT_EQ(standalone.dump(), R"({"grantFrom":"declaration"})");

  nlohmann::ordered_json hosted;
  GrantDecision hosted_decision = DecideGrants(catalogue, std::nullopt, true);
  AppendCatalogueGrantFields(hosted, hosted_decision);
  EXPECT_EQ(hosted.dump(), R"({"grantFrom":"hosted-default","grantNote":)" +
                               nlohmann::json(*hosted_decision.note).dump() + "}");

  nlohmann::ordered_json broken;
  GrantDecision broken_decision = DecideGrants(catalogue, std::string("nope"), true);
  AppendCatalogueGrantFields(broken, broken_decision);
  EXPECT_EQ(broken.dump(), R"({"grantFrom":"MCP_SKILL_RUN","grantError":)" +
                               nlohmann::json(*broken_decision.error).dump() + "}");
}

}  // namespace
}  // namespace skillmcp
