#include "broker/tools/run_receipt.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

#include "shared/utf8.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

TEST(RepairUtf8, KeepsValidTextAndReplacesInvalidBytes) {
  EXPECT_EQ(RepairUtf8("plain €  𝄞", false), "plain €  𝄞");
  EXPECT_EQ(RepairUtf8("f\xff\xfe\xc3(", false), "f\uFFFD\uFFFD\uFFFD(");
  EXPECT_EQ(RepairUtf8("\xc0\xaf", false), "\uFFFD\uFFFD");            // overlong '/'
  EXPECT_EQ(RepairUtf8("\xed\xa0\x80", false), "\uFFFD\uFFFD\uFFFD");  // surrogate
  EXPECT_EQ(RepairUtf8("\xf4\x90\x80\x80", false).find('\xf4'), std::string::npos);  // > U+10FFFF
  EXPECT_EQ(RepairUtf8(std::string("a\0b", 3), false), std::string("a\0b", 3));
}

TEST(RepairUtf8, ACharacterCutAtTheCapIsDroppedNotReplaced) {
  EXPECT_EQ(RepairUtf8("ab\xe2\x82", true), "ab");
  EXPECT_EQ(RepairUtf8("ab\xf0\x9d\x84", true), "ab");
  // Not cut: the same bytes are an encoding error and show as U+FFFD.
  EXPECT_EQ(RepairUtf8("ab\xe2\x82", false), "ab\uFFFD\uFFFD");
  // Cut, but the tail is not a prefix of any character: still replaced.
  EXPECT_EQ(RepairUtf8("ab\xff", true), "ab\uFFFD");
}

TEST(StreamCapture, KeepsTheFirstMebibyteAndFlagsTheRest) {
  StreamCapture c;
  std::string chunk(kStreamCaptureBytes - 1, 'a');
  c.Append(chunk.data(), chunk.size());
  EXPECT_FALSE(c.truncated);
  c.Append("\xe2\x82\xac", 3);  // '€' straddles the cap
  EXPECT_TRUE(c.truncated);
  EXPECT_EQ(c.data.size(), kStreamCaptureBytes);
  EXPECT_EQ(c.total, kStreamCaptureBytes + 2);
  std::string clean = RepairUtf8(c.data, c.truncated);
  EXPECT_EQ(clean, chunk);
}

TEST(BuildReceipt, KeyOrderAndNulls) {
  ReceiptContext c;
  c.skill = "weather";
  c.script = "scripts/forecast.js";
  c.timeout_ms = 1000;
  c.env = {"HOME", "PATH"};
  RunResult o;
  o.signal = SIGKILL;
  o.out.Append("\xff", 1);
  o.timed_out = true;
  o.duration_ms = 3001;
  nlohmann::ordered_json j = BuildReceipt(c, o);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"skill", "script", "interpreter", "exitCode", "signal",
                                            "stdout", "stderr", "truncated", "timedOut",
                                            "timeoutMs", "durationMs", "env"}));
  EXPECT_TRUE(j["exitCode"].is_null());
  EXPECT_EQ(j["signal"], "SIGKILL");
  EXPECT_EQ(j["stdout"], "\uFFFD");
  EXPECT_EQ(j.dump(), nlohmann::ordered_json::parse(j.dump()).dump());  // valid JSON

  c.network_note = "note";
  o.exit_code = 0;
  o.signal.reset();
  j = BuildReceipt(c, o);
  EXPECT_EQ(j.back(), "note");
  EXPECT_EQ(j["exitCode"], 0);
  EXPECT_TRUE(j["signal"].is_null());
}

// The declared mode's egress: each list, then what it left out, only when it left
// something out.
TEST(BuildReceipt, EgressListsThenWhatTheyLeftOut) {
  ReceiptContext c;
  RunResult o;
  o.exit_code = 0;
  o.egress = EgressSummary{};
  o.egress->hosts.push_back({"api.example.com", 443, 2, 10, 20});
  auto keys = [](const nlohmann::ordered_json& j) {
    std::vector<std::string> out;
    for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
    return out;
  };
  EXPECT_EQ(keys(BuildReceipt(c, o)["egress"]), (std::vector<std::string>{"hosts", "refused"}));
  o.egress->hosts_omitted = {3, 4, 5000000000ull, 7};
  o.egress->refused_omitted = 9;
  const nlohmann::ordered_json e = BuildReceipt(c, o)["egress"];
  EXPECT_EQ(keys(e),
            (std::vector<std::string>{"hosts", "hostsOmitted", "refused", "refusedOmitted"}));
  EXPECT_EQ(keys(e["hostsOmitted"]),
            (std::vector<std::string>{"hosts", "connections", "bytesOut", "bytesIn"}));
  EXPECT_EQ(e["hostsOmitted"]["hosts"], 3);
  EXPECT_EQ(e["hostsOmitted"]["connections"], 4);
  EXPECT_EQ(e["hostsOmitted"]["bytesOut"], 5000000000ull);
  EXPECT_EQ(e["hostsOmitted"]["bytesIn"], 7);
  EXPECT_EQ(e["refusedOmitted"], 9);
}

// A run the whole-run memory bound killed: the same keys as any receipt (docs/wire.md has
// no field for it), SIGKILL as for a timeout's kill, and the reason as stderr's last line.
TEST(BuildReceipt, AMemoryKillEndsStderrWithTheReason) {
  ReceiptContext c;
  c.skill = "hog";
  c.script = "scripts/fork.js";
  c.timeout_ms = 60000;
  RunResult o;
  o.signal = SIGKILL;
  o.err.Append("child 3 started", 15);
  o.memory_kill = MemoryKill{256ull << 20, 301ull << 20, 7};
  nlohmann::ordered_json j = BuildReceipt(c, o);
  EXPECT_EQ(j.size(), 12u);  // no key beyond the 2025 receipt's
  EXPECT_EQ(j["signal"], "SIGKILL");
  EXPECT_EQ(j["timedOut"], false);
  EXPECT_EQ(j["stderr"],
            "child 3 started\nskill-mcp: the run used more than 256 MiB in all (7 processes, "
            "301 MiB when sampled) and was killed; SKILL_MCP_LIMIT_RUN_MEMORY_MB sets the "
            "limit\n");
  // A sample a little over the limit reads as more than the limit, never as the limit
  // itself (MiB rounded up).
  o.memory_kill = MemoryKill{256ull << 20, (256ull << 20) + 4096, 9};
  EXPECT_NE(BuildReceipt(c, o)["stderr"].get<std::string>().find("(9 processes, 257 MiB when sampled)"),
            std::string::npos);
  o.memory_kill = MemoryKill{256ull << 20, 257ull << 20, 9};
  EXPECT_NE(BuildReceipt(c, o)["stderr"].get<std::string>().find("(9 processes, 257 MiB when sampled)"),
            std::string::npos);
  o.memory_kill.reset();  // not killed for memory: stderr as the script wrote it
  EXPECT_EQ(BuildReceipt(c, o)["stderr"], "child 3 started");
  o.err = StreamCapture{};
  o.memory_kill = MemoryKill{1ull << 20, 2ull << 20, 1};
  EXPECT_EQ(BuildReceipt(c, o)["stderr"].get<std::string>().rfind("skill-mcp: the run used more "
                                                                  "than 1 MiB in all (1 process,",
                                                                  0),
            0u);
}

// A run with more processes than one sample can read is killed too (a capped sample is a
// breach, broker/run/run_memory.h): its own line, not a claim about MiB it did not count.
TEST(BuildReceipt, ARunTooBigToSampleSaysSo) {
  ReceiptContext c;
  c.skill = "forks";
  c.script = "scripts/fork.js";
  RunResult o;
  o.signal = SIGKILL;
  o.memory_kill = MemoryKill{256ull << 20, 3ull << 20, 60, 512};
  const std::string err = BuildReceipt(c, o)["stderr"];
  EXPECT_EQ(err,
            "skill-mcp: the run had more processes than the broker can sample (512 /proc "
            "reads in one sample) and was killed, since what it did not read may hold any "
            "amount of memory; SKILL_MCP_LIMIT_NPROC bounds a run's processes\n");
}

TEST(SignalName, NamesAndNumbers) {
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGSYS), "SIGSYS");
}

TEST(DescribeSetupFailure, NamesTheStepAndGivesTheHint) {
  SetupFailure f{static_cast<int32_t>(WorkerStep::kSetUid), EPERM, 64000, 64000, "/w", "/n"};
  std::string m = DescribeSetupFailure(f);
  EXPECT_NE(m.find("switch to the run-as uid (run-as uid 64000, gid 64000)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("CAP_SETUID"), std::string::npos) << m;
  f.step = static_cast<int32_t>(WorkerStep::kSpawn);
  f.err = ENOEXEC;
  EXPECT_NE(DescribeSetupFailure(f).find("could not start the worker /w"), std::string::npos);
  f.step = 199;
  EXPECT_NE(DescribeSetupFailure(f).find("unknown setup step 199"), std::string::npos);
  f.step = kUnreadableReport;
  EXPECT_NE(DescribeSetupFailure(f).find("not a setup report"), std::string::npos);
}

}  // namespace
}  // namespace skillmcp
