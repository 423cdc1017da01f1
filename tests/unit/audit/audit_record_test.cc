#include "broker/audit/audit_record.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "broker/confirm/payloads.h"
#include "broker/confirm/shown_text.h"
#include "broker/confirm/will_run.h"

namespace skillmcp {
namespace {

AuditFacts RanFacts() {
  AuditFacts f;
  f.outcome = AuditOutcome::kRan;
  f.peer = AuditPeer{1000, 1001, 4242, "alice", true};
  f.client_name = "claude-code";
  f.client_version = "2.1.0";
  f.skill = "pdf";
  f.script = "scripts/fill.js";
  f.prepared = true;
  f.script_sha256 = std::string(64, 'a');
  f.interpreter = "node";
  f.interpreter_path = "/usr/bin/node";
  f.argv = {"scripts/fill.js", "--out", "a.pdf"};
  f.env_names = {"API_KEY"};
  f.timeout_ms = 60000;
  f.egress_allowed = std::vector<std::string>{"api.example.com:80,443"};
  f.egress_reached = std::vector<std::string>{"api.example.com:443"};
  f.egress_refused = std::vector<std::string>{"dns other.example:0", "tcp 192.0.2.1:\u202e443"};
  f.confirm = "elicitation";
  f.confirm_mode = "ask-user";
  f.confirm_wait_ms = 1234;
  f.run_uid = 61000;
  f.layers = {"seccomp", "landlock"};
  f.exit_code = 0;
  f.duration_ms = 70;
  f.peak_memory_bytes = 52428800;
  f.stdout_bytes = 12;
  f.stderr_bytes = 0;
  f.lost_before = 3;
  return f;
}

std::string Field(const AuditFields& fields, const std::string& key) {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return "<absent>";
}

TEST(AuditRecord, RanRecordCarriesEveryFieldInItsOrder) {
  const AuditFields fields = BuildAuditFields(RanFacts());
  std::vector<std::string> keys;
  for (const auto& [k, v] : fields) keys.push_back(k);
  const std::vector<std::string> expected = {"MESSAGE_ID",
                                             "MESSAGE",
                                             "PRIORITY",
                                             "SYSLOG_IDENTIFIER",
                                             "SKILL_MCP_OUTCOME",
                                             "SKILL_MCP_PEER_UID",
                                             "SKILL_MCP_PEER_GID",
                                             "SKILL_MCP_PEER_PID",
                                             "SKILL_MCP_PEER_USER",
                                             "SKILL_MCP_PEER_FROM",
                                             "SKILL_MCP_CLIENT_NAME",
                                             "SKILL_MCP_CLIENT_VERSION",
                                             "SKILL_MCP_SKILL",
                                             "SKILL_MCP_SCRIPT",
                                             "SKILL_MCP_SCRIPT_SHA256",
                                             "SKILL_MCP_INTERPRETER",
                                             "SKILL_MCP_INTERPRETER_PATH",
                                             "SKILL_MCP_ARGV",
                                             "SKILL_MCP_ENV_NAMES",
                                             "SKILL_MCP_TIMEOUT_MS",
                                             "SKILL_MCP_EGRESS_ALLOWED",
                                             "SKILL_MCP_CONFIRM_MODE",
                                             "SKILL_MCP_CONFIRM",
                                             "SKILL_MCP_CONFIRM_WAIT_MS",
                                             "SKILL_MCP_RUN_UID",
                                             "SKILL_MCP_LAYERS",
                                             "SKILL_MCP_EXIT_CODE",
                                             "SKILL_MCP_DURATION_MS",
                                             "SKILL_MCP_PEAK_MEMORY_BYTES",
                                             "SKILL_MCP_STDOUT_BYTES",
                                             "SKILL_MCP_STDERR_BYTES",
                                             "SKILL_MCP_EGRESS_REACHED",
                                             "SKILL_MCP_EGRESS_REFUSED",
                                             "SKILL_MCP_AUDIT_LOST"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(Field(fields, "MESSAGE_ID"), AuditMessageId(AuditOutcome::kRan));
  EXPECT_EQ(Field(fields, "SYSLOG_IDENTIFIER"), "skill-mcp");
  EXPECT_EQ(Field(fields, "SKILL_MCP_OUTCOME"), "ran");
  EXPECT_EQ(Field(fields, "SKILL_MCP_PEER_UID"), "1000");
  EXPECT_EQ(Field(fields, "SKILL_MCP_PEER_GID"), "1001");
  EXPECT_EQ(Field(fields, "SKILL_MCP_PEER_PID"), "4242");
  EXPECT_EQ(Field(fields, "SKILL_MCP_PEER_USER"), "alice");
  EXPECT_EQ(Field(fields, "SKILL_MCP_PEER_FROM"), "socket");
  EXPECT_EQ(Field(fields, "SKILL_MCP_ARGV"), R"(["scripts/fill.js","--out","a.pdf"])");
  EXPECT_EQ(Field(fields, "SKILL_MCP_ENV_NAMES"), R"(["API_KEY"])");
  EXPECT_EQ(Field(fields, "SKILL_MCP_LAYERS"), R"(["seccomp","landlock"])");
  EXPECT_EQ(Field(fields, "SKILL_MCP_CONFIRM_WAIT_MS"), "1234");
  EXPECT_EQ(Field(fields, "SKILL_MCP_AUDIT_LOST"), "3");
  EXPECT_EQ(Field(fields, "SKILL_MCP_EGRESS_ALLOWED"), R"(["api.example.com:80,443"])");
  EXPECT_EQ(Field(fields, "SKILL_MCP_EGRESS_REACHED"), R"(["api.example.com:443"])");
  // A refusal's target is the run's word (a name it asked for): shown, never raw.
  const nlohmann::json refused = nlohmann::json::parse(Field(fields, "SKILL_MCP_EGRESS_REFUSED"));
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0], "dns other.example:0");
  EXPECT_EQ(refused[1], ShowUntrusted("tcp 192.0.2.1:\u202e443"));
  EXPECT_EQ(refused[1].get<std::string>().find("\u202e"), std::string::npos);
  EXPECT_EQ(Field(fields, "MESSAGE"),
            "skill_run: uid 1000 (alice) ran script \"scripts/fill.js\" of skill \"pdf\": exit 0 "
            "after 70 ms");
}

TEST(AuditRecord, WhatTheEgressListsLeftOutIsCountedBesideThem) {
  AuditFacts f = RanFacts();
  EXPECT_EQ(Field(BuildAuditFields(f), "SKILL_MCP_EGRESS_REACHED_OMITTED"), "<absent>");
  EXPECT_EQ(Field(BuildAuditFields(f), "SKILL_MCP_EGRESS_REFUSED_OMITTED"), "<absent>");
  f.egress_hosts_omitted = 2;
  f.egress_refused_omitted = 44;
  const AuditFields fields = BuildAuditFields(f);
  std::vector<std::string> keys;
  for (const auto& [k, v] : fields) keys.push_back(k);
  const auto at = [&keys](const char* k) { return std::find(keys.begin(), keys.end(), k) - keys.begin(); };
  EXPECT_EQ(Field(fields, "SKILL_MCP_EGRESS_REACHED_OMITTED"), "2");
  EXPECT_EQ(Field(fields, "SKILL_MCP_EGRESS_REFUSED_OMITTED"), "44");
  EXPECT_EQ(at("SKILL_MCP_EGRESS_REACHED_OMITTED"), at("SKILL_MCP_EGRESS_REACHED") + 1);
  EXPECT_EQ(at("SKILL_MCP_EGRESS_REFUSED_OMITTED"), at("SKILL_MCP_EGRESS_REFUSED") + 1);
}

TEST(AuditRecord, EachOutcomeHasItsOwnMessageIdAndName) {
  std::set<std::string_view> ids, names;
  for (AuditOutcome o : {AuditOutcome::kRan, AuditOutcome::kRefused, AuditOutcome::kDeclined,
                         AuditOutcome::kCancelled, AuditOutcome::kTimedOut,
                         AuditOutcome::kMemoryKilled, AuditOutcome::kSetupFailed}) {
    ASSERT_EQ(AuditMessageId(o).size(), 32u);
    EXPECT_EQ(AuditMessageId(o).find_first_not_of("0123456789abcdef"), std::string_view::npos);
    ids.insert(AuditMessageId(o));
    names.insert(AuditOutcomeName(o));
  }
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(names.size(), 7u);
}

// The arguments an operator reads are the very lines the user approved: the same escapes
// and the same cut as the confirmation prompt's.
TEST(AuditRecord, ArgumentsAreShownExactlyAsThePreviewShowsThem) {
  AuditFacts f = RanFacts();
  const std::string hidden = "a\u202eb\nc\"d\\e";
  const std::string long_arg(300, 'x');
  const std::string invalid = "bad\xff";
  f.argv = {"scripts/fill.js", hidden, long_arg, invalid};
  const AuditFields fields = BuildAuditFields(f);
  const nlohmann::json argv = nlohmann::json::parse(Field(fields, "SKILL_MCP_ARGV"));
  ASSERT_EQ(argv.size(), 4u);

  WillRun w;
  w.skill = f.skill;
  w.interpreter = "node";
  w.argv = f.argv;
  const std::string prompt = ElicitationRequestParams(w)["message"].get<std::string>();
  for (size_t i = 1; i < f.argv.size(); ++i) {
    const std::string shown = argv[i].get<std::string>();
    EXPECT_EQ(shown, ShowUntrusted(f.argv[i]));
    EXPECT_NE(prompt.find("  " + std::to_string(i) + ". \"" + shown + "\"\n"), std::string::npos)
        << "argument " << i << " is not shown as the prompt shows it";
    EXPECT_EQ(shown.find('\n'), std::string::npos);
  }
  EXPECT_NE(argv[2].get<std::string>().find("[cut: 300 characters"), std::string::npos);
}

TEST(AuditRecord, ClientChosenNamesAreShownNotTrusted) {
  AuditFacts f;
  f.outcome = AuditOutcome::kRefused;
  f.skill = "evil\nSKILL_MCP_OUTCOME=ran";
  f.script = "x\u2066.js";
  f.client_name = "c\x1b[31m";
  f.refusal = "UNKNOWN_SKILL";
  f.reason = "no skill named \"evil\nSKILL_MCP_OUTCOME=ran\"";
  const AuditFields fields = BuildAuditFields(f);
  for (const auto& [k, v] : fields) EXPECT_EQ(v.find('\n'), std::string::npos) << k;
  EXPECT_EQ(Field(fields, "SKILL_MCP_SKILL"), ShowUntrusted(f.skill));
  EXPECT_EQ(Field(fields, "SKILL_MCP_SCRIPT"), ShowUntrusted(f.script));
  EXPECT_EQ(Field(fields, "SKILL_MCP_SCRIPT").find("\u2066"), std::string::npos);
  EXPECT_EQ(Field(fields, "SKILL_MCP_CLIENT_NAME"), ShowUntrusted(f.client_name));
  EXPECT_EQ(Field(fields, "SKILL_MCP_CLIENT_NAME").find('\x1b'), std::string::npos);
  // Nothing of a run that never was prepared.
  EXPECT_EQ(Field(fields, "SKILL_MCP_ARGV"), "<absent>");
  EXPECT_EQ(Field(fields, "SKILL_MCP_SCRIPT_SHA256"), "<absent>");
  EXPECT_EQ(Field(fields, "SKILL_MCP_RUN_UID"), "<absent>");
  EXPECT_EQ(Field(fields, "SKILL_MCP_REFUSAL"), "UNKNOWN_SKILL");
  EXPECT_EQ(Field(fields, "SKILL_MCP_OUTCOME"), "refused");
  EXPECT_EQ(Field(fields, "PRIORITY"), "5");
}

// The facts have names for variables and sizes for output, never their contents: no
// field but these may carry what the client or the script chose.
TEST(AuditRecord, NoFieldCarriesAValueOrOutput) {
  const AuditFields fields = BuildAuditFields(RanFacts());
  for (const auto& [k, v] : fields) {
    EXPECT_EQ(k.find("VALUE"), std::string::npos) << k;
    EXPECT_EQ(k.find("OUTPUT"), std::string::npos) << k;
    if (k == "SKILL_MCP_STDOUT_BYTES" || k == "SKILL_MCP_STDERR_BYTES") {
      EXPECT_EQ(v.find_first_not_of("0123456789"), std::string::npos) << k;
    }
  }
}

TEST(AuditRecord, JsonLineIsOneMarkedLine) {
  const AuditFields fields = BuildAuditFields(RanFacts());
  const std::string line = AuditJsonLine(fields);
  ASSERT_EQ(line.rfind(kAuditJsonMark, 0), 0u) << line;
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["skill_mcp_audit"], 1);
  for (const auto& [k, v] : fields) EXPECT_EQ(j[k], v) << k;
}

TEST(AuditRecord, JournalDatagramUsesTheBinaryFormOnlyForANewline) {
  const AuditFields fields = {{"A", "plain"}, {"B", "two\nlines"}};
  const std::string d = JournalDatagram(fields);
  std::string expected = "A=plain\nB\n";
  expected += std::string("\x09\0\0\0\0\0\0\0", 8);
  expected += "two\nlines\n";
  EXPECT_EQ(d, expected);
}

}  // namespace
}  // namespace skillmcp
