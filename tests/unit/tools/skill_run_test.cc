// skill_run against a fake Runner (broker/run/runner.h): the refusal order before and
// after the gate, the token's binding of the script's identity, and that what reaches
// the run side is the very descriptor that was checked.
#include "broker/tools/skill_run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

class FakeRunner : public Runner {
 public:
  bool Busy() const override { return busy; }
  // As the supervisor: whatever can refuse the run (here `refuse`) comes before the commit.
  std::optional<StartRefusal> StartCommitted(PreparedRun run, Commit commit,
                                             Done on_done) override {
    if (refuse) return refuse;
    if (before_commit) before_commit();
    if (!commit()) return StartRefusal{StartProblem::kUnavailable, "withdrawn"};
    started.push_back(std::move(run));
    done = std::move(on_done);
    return std::nullopt;
  }
  void Cancel() override { ++cancels; }

  bool busy = false;
  std::optional<StartRefusal> refuse;   // e.g. every uid of the range taken
  std::function<void()> before_commit;  // e.g. another broker spends the token first
  std::vector<PreparedRun> started;
  Done done;
  int cancels = 0;
};

class SkillRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-srt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/demo";
    std::filesystem::create_directories(dir_ + "/scripts");
    Write("scripts/run.js", "console.log('a')\n");
    Skill s;
    s.name = "demo";
    s.source = dir_;
    s.dir = UniqueFd(open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    s.declaration_present = true;
    s.declaration_ok = true;
    s.runs = {DeclaredRun{"scripts/run.js", "node", {}, 60000},
              DeclaredRun{"scripts/missing.js", "node", {}, 60000}};
    catalogue_.roots = {root_};
    catalogue_.roots_from = "SKILLS_DIR";
    catalogue_.skills.push_back(std::move(s));
    grants_ = DecideGrants(catalogue_, std::nullopt, false);
    tokens_ = ConfirmTokens::CreateRandom();
    ASSERT_TRUE(tokens_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void Write(const std::string& rel, const std::string& data) {
    std::ofstream(dir_ + "/" + rel, std::ios::binary | std::ios::trunc) << data;
  }
  SkillRunTool Tool(std::optional<std::string> blocked = std::nullopt) {
    SkillRunDeps d;
    d.view = CatalogueView{&catalogue_, &grants_};
    d.is_set = [](std::string_view) { return false; };
    d.tokens = tokens_.get();
    d.runner = &runner_;
    d.runs_blocked = std::move(blocked);
    d.egress = egress_;
    d.now = [] { return int64_t{1000}; };
    d.audit.emit = [this](AuditFacts f) { records_.push_back(std::move(f)); };
    d.audit.layers = {"seccomp"};
    d.interpreter_paths["node"] = "/usr/bin/node";
    return SkillRunTool(std::move(d));
  }
  // One call without elicitation; the answer, as JSON.
  Json Call(SkillRunTool& tool, Json args) {
    got_.reset();
    tool.Call(args, Json(1), false, [this](ToolResult r) { got_ = std::move(r); });
    if (!got_) return Json();  // started: the fake holds the run
    return Json::parse(got_->payload.dump());
  }
  // One 2026-07-28 call; the answer (tool result or the input_required body), as JSON.
  Json Round(SkillRunTool& tool, const Json& args, const RoundCall& round) {
    got_.reset();
    asked_.reset();
    tool.CallRound(
        args, Json(1), round, [this](ToolResult r) { got_ = std::move(r); },
        [this](OrderedJson body) { asked_ = Json::parse(body.dump()); });
    if (asked_) return *asked_;
    if (!got_) return Json();  // started
    return Json::parse(got_->payload.dump());
  }
  static RoundCall Retry(const std::string& state, const std::string& action, bool approve) {
    RoundCall r;
    r.client_elicits = true;
    r.request_state = state;
    r.input_responses =
        Json{{"confirm", {{"action", action}, {"content", {{"approve", approve}}}}}};
    return r;
  }
  std::string RoundState(SkillRunTool& tool, const Json& args) {
    RoundCall first;
    first.client_elicits = true;
    Json asked = Round(tool, args, first);
    EXPECT_TRUE(asked.contains("requestState")) << asked.dump();
    return asked.value("requestState", "");
  }
  static StartRefusal UidsTaken() {
    return StartRefusal{StartProblem::kUnavailable, "every uid of the run range is taken"};
  }
  static Json Args(const std::string& name, const std::string& script) {
    return Json{{"name", name}, {"script", script}, {"args", Json::array()}};
  }
  std::string Token(SkillRunTool& tool, Json args) {
    Json issued = Call(tool, args);
    EXPECT_EQ(issued.value("status", ""), "confirmation-required") << issued.dump();
    return issued.value("confirmToken", "");
  }

  std::string root_, dir_;
  Catalogue catalogue_;
  GrantDecision grants_;
  std::unique_ptr<ConfirmTokens> tokens_;
  FakeRunner runner_;
  std::optional<ToolResult> got_;
  std::optional<Json> asked_;
  std::vector<AuditFacts> records_;  // the audit records written, in order
  EgressPolicy egress_;              // the network mode's part of the tool's deps
};

TEST_F(SkillRunTest, RefusalsBeforeTheGateComeInTheirOrder) {
  SkillRunTool blocked = Tool("no runs here");
  // An unknown skill is named before runs being blocked, ...
  EXPECT_EQ(Call(blocked, Args("nope", "../x"))["error"], "UNKNOWN_SKILL");
  // ... blocked runs before the script's declaration, ...
  EXPECT_EQ(Call(blocked, Args("demo", "scripts/undeclared.js"))["error"], "RUNS_BLOCKED");
  SkillRunTool tool = Tool();
  // ... the declaration before the path, ...
  EXPECT_EQ(Call(tool, Args("demo", "../escape.js"))["error"], "SCRIPT_NOT_DECLARED");
  // ... and the path (a declared file that is not there) before the gate.
  EXPECT_EQ(Call(tool, Args("demo", "scripts/missing.js"))["error"], "PATH_REFUSED");
  EXPECT_TRUE(runner_.started.empty());
}

// An allowlist no run description can carry is refused before the gate (no preview,
// token or prompt), after the refusals the reference has; one host fewer is previewed.
TEST_F(SkillRunTest, AnAllowlistNoRunCanBeHeldToIsRefusedBeforeTheGate) {
  std::vector<std::string>& declared = catalogue_.skills[0].declared_egress;
  for (size_t i = 0; i <= kRunSpecMaxEgressRules; ++i)
    declared.push_back("h" + std::to_string(i) + ".example.com");
  egress_ = EgressPolicy{true, std::nullopt};
  SkillRunTool tool = Tool();
  const Json args = Args("demo", "scripts/run.js");
  const Json refused = Call(tool, args);
  EXPECT_EQ(refused.value("error", ""), "RUNS_BLOCKED") << refused.dump();
  const std::string message = refused.value("message", "");
  EXPECT_NE(message.find("65 hosts"), std::string::npos) << message;
  EXPECT_NE(message.find("SKILL_MCP_EGRESS_ALLOW"), std::string::npos) << message;
  EXPECT_NE(message.find("SKILL_MCP_NETWORK=on"), std::string::npos) << message;
  EXPECT_FALSE(refused.contains("confirmToken"));
  ASSERT_FALSE(records_.empty());
  EXPECT_EQ(records_.back().refusal, "RUNS_BLOCKED");
  // A client that elicits is not asked either.
  RoundCall round;
  round.client_elicits = true;
  EXPECT_EQ(Round(tool, args, round).value("error", ""), "RUNS_BLOCKED");
  EXPECT_FALSE(asked_.has_value());
  // The reference's own refusals come first.
  EXPECT_EQ(Call(tool, Args("demo", "scripts/undeclared.js"))["error"], "SCRIPT_NOT_DECLARED");
  EXPECT_EQ(Call(tool, Args("demo", "scripts/missing.js"))["error"], "PATH_REFUSED");
  // Under the other modes the declaration holds no run to anything: previewed.
  egress_ = EgressPolicy{false, std::nullopt};
  SkillRunTool undeclared_mode = Tool();
  EXPECT_EQ(Call(undeclared_mode, args).value("status", ""), "confirmation-required");
  // The control: the most a run can be held to.
  declared.pop_back();
  egress_ = EgressPolicy{true, std::nullopt};
  SkillRunTool fits = Tool();
  const Json preview = Call(fits, args);
  EXPECT_EQ(preview.value("status", ""), "confirmation-required") << preview.dump();
  EXPECT_EQ(preview["preview"]["willRun"]["egress"].size(), kRunSpecMaxEgressRules);
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, AScriptSwappedForALinkOutIsRefusedByThePathCheck) {
  std::ofstream(root_ + "/evil.js") << "console.log('evil');";
  std::filesystem::remove(dir_ + "/scripts/run.js");
  std::filesystem::create_symlink("../../evil.js", dir_ + "/scripts/run.js");
  SkillRunTool tool = Tool();
  EXPECT_EQ(Call(tool, Args("demo", "scripts/run.js"))["error"], "PATH_REFUSED");
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, BusyRunnerRefusesBeforeTheTokenIsSpent) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  runner_.busy = true;
  EXPECT_EQ(Call(tool, args)["error"], "RUN_IN_PROGRESS");
  runner_.busy = false;
  EXPECT_TRUE(Call(tool, args).is_null());  // the same token still runs
  ASSERT_EQ(runner_.started.size(), 1u);
}

TEST_F(SkillRunTest, ArgumentContentIsCheckedAfterTheGate) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["args"] = Json::array({std::string("a\0b", 3)});
  // Without a token the gate answers first, whatever the arguments hold.
  Json first = Call(tool, args);
  EXPECT_EQ(first.value("status", ""), "confirmation-required") << first.dump();
  args["confirmToken"] = first["confirmToken"];
  EXPECT_EQ(Call(tool, args)["error"], "INVALID_ARGUMENT");
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, AScriptChangedAfterThePreviewIsDraftChanged) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  // Same size, same inode, other bytes: only the hash can tell.
  int fd = open((dir_ + "/scripts/run.js").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "b", 1, 13), 1);  // console.log('b')
  close(fd);
  Json answer = Call(tool, args);
  EXPECT_EQ(answer.value("error", ""), "DRAFT_CHANGED") << answer.dump();
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, AScriptReplacedAfterThePreviewIsDraftChanged) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  // The same bytes in a new file (another inode) under the same name.
  Write("scripts/new.js", "console.log('a')\n");
  ASSERT_EQ(rename((dir_ + "/scripts/new.js").c_str(), (dir_ + "/scripts/run.js").c_str()), 0);
  EXPECT_EQ(Call(tool, args).value("error", ""), "DRAFT_CHANGED");
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, TheRunGetsTheDescriptorThatWasChecked) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  struct stat before {};
  ASSERT_EQ(stat((dir_ + "/scripts/run.js").c_str(), &before), 0);
  EXPECT_TRUE(Call(tool, args).is_null());
  ASSERT_EQ(runner_.started.size(), 1u);
  const PreparedRun& run = runner_.started[0];
  // Swapped after the check: the run still holds the checked file, not the new one.
  Write("scripts/new.js", "console.log('swapped')\n");
  ASSERT_EQ(rename((dir_ + "/scripts/new.js").c_str(), (dir_ + "/scripts/run.js").c_str()), 0);
  // The run holds a sealed copy of the checked file's bytes; the identity names that file.
  EXPECT_EQ(fcntl(run.script_fd.get(), F_GET_SEALS),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  EXPECT_EQ(run.identity.ino, static_cast<uint64_t>(before.st_ino));
  EXPECT_EQ(run.identity.size, 17u);
  char buf[32] = {};
  ASSERT_EQ(pread(run.script_fd.get(), buf, sizeof buf, 0), 17);
  EXPECT_EQ(std::string(buf), "console.log('a')\n");
  EXPECT_EQ(run.script, "scripts/run.js");
  EXPECT_EQ(run.script_real_path, dir_ + "/scripts/run.js");
  // The result comes back as the receipt, rendered here.
  ASSERT_TRUE(runner_.done);
  RunResult result;
  result.exit_code = 0;
  result.out.Append("hi", 2);
  runner_.done(std::move(result));
  ASSERT_TRUE(got_);
  EXPECT_FALSE(got_->is_error);
  EXPECT_EQ(got_->payload["skill"], "demo");
  EXPECT_EQ(got_->payload["exitCode"], 0);
  EXPECT_EQ(got_->payload["stdout"], "hi");
}

TEST_F(SkillRunTest, AnInPlaceWriteAfterTheConfirmationChangesNothingThatRuns) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  EXPECT_TRUE(Call(tool, args).is_null());
  ASSERT_EQ(runner_.started.size(), 1u);
  const PreparedRun& run = runner_.started[0];
  // Same inode, same size, other bytes: what a writer racing the worker's start would do.
  int fd = open((dir_ + "/scripts/run.js").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, "console.log('b')\n", 17, 0), 17);
  close(fd);
  char buf[32] = {};
  ASSERT_EQ(pread(run.script_fd.get(), buf, sizeof buf, 0), 17);
  EXPECT_EQ(std::string(buf), "console.log('a')\n");
  // Nor can whoever holds the copy (the script gets it as fd 6) change it.
  EXPECT_EQ(pwrite(run.script_fd.get(), "x", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
}

TEST_F(SkillRunTest, AScriptOverTheSizeLimitIsRefusedBeforeTheGate) {
  SkillRunTool tool = Tool();
  int fd = open((dir_ + "/scripts/run.js").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMaxScriptBytes + 1)), 0);  // sparse
  close(fd);
  Call(tool, Args("demo", "scripts/run.js"));
  ASSERT_TRUE(got_);
  EXPECT_TRUE(got_->is_error);
  EXPECT_EQ(got_->payload["error"], "PATH_REFUSED");
  EXPECT_NE(got_->payload["message"].get<std::string>().find("MiB script limit"),
            std::string::npos);
  EXPECT_TRUE(runner_.started.empty());
}

TEST_F(SkillRunTest, ArgumentsThatCanNeverRunDoNotSpendTheToken) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["args"] = Json::array({std::string("a\0b", 3)});
  args["confirmToken"] = Token(tool, args);
  ASSERT_FALSE(args["confirmToken"].get<std::string>().empty());
  for (int i = 0; i < 2; ++i) {
    Json r = Call(tool, args);
    EXPECT_EQ(r["error"], "INVALID_ARGUMENT") << r.dump();
  }
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  EXPECT_TRUE(runner_.started.empty());
}

// A decline or cancel authorises nothing: it is not recorded (so declines cannot fill the
// spent record), a replay declines again, and the state still runs once when approved.
TEST_F(SkillRunTest, ADeclinedRoundSpendsNothingAndTheApprovalStillRunsOnce) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  const std::string state = RoundState(tool, args);
  for (const char* action : {"decline", "cancel", "decline"}) {
    Json r = Round(tool, args, Retry(state, action, false));
    EXPECT_EQ(r.value("cancelled", false), true) << r.dump();
    EXPECT_FALSE(got_->is_error);
  }
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  EXPECT_TRUE(runner_.started.empty());
  EXPECT_TRUE(Round(tool, args, Retry(state, "accept", true)).is_null());
  ASSERT_EQ(runner_.started.size(), 1u);
  EXPECT_EQ(tokens_->SpentCount(), 1u);
  // The approval is spent: replayed, it is TOKEN_REUSED; a replayed decline still declines.
  EXPECT_EQ(Round(tool, args, Retry(state, "accept", true))["error"], "TOKEN_REUSED");
  EXPECT_EQ(Round(tool, args, Retry(state, "decline", false)).value("error", ""), "TOKEN_REUSED");
  EXPECT_EQ(runner_.started.size(), 1u);
}

// The run side refusing to start (uid range exhausted, no scratch directory, no worker)
// leaves the user's approval unspent: the same token runs once the cause is gone.
TEST_F(SkillRunTest, ARunThatCannotStartLeavesTheConfirmTokenValid) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  args["confirmToken"] = Token(tool, args);
  runner_.refuse = UidsTaken();
  EXPECT_EQ(Call(tool, args)["error"], "RUN_NOT_STARTED");
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  runner_.refuse.reset();
  EXPECT_TRUE(Call(tool, args).is_null());
  ASSERT_EQ(runner_.started.size(), 1u);
  EXPECT_EQ(Call(tool, args)["error"], "TOKEN_REUSED");
}

TEST_F(SkillRunTest, ARunThatCannotStartLeavesTheRoundStateValid) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  const std::string state = RoundState(tool, args);
  runner_.refuse = UidsTaken();
  EXPECT_EQ(Round(tool, args, Retry(state, "accept", true))["error"], "RUN_NOT_STARTED");
  EXPECT_EQ(tokens_->SpentCount(), 0u);
  runner_.refuse.reset();
  EXPECT_TRUE(Round(tool, args, Retry(state, "accept", true)).is_null());
  ASSERT_EQ(runner_.started.size(), 1u);
}

// The spend is the last step before the start, and it can still lose (another broker spent
// the same token first): then nothing starts and the answer is TOKEN_REUSED.
TEST_F(SkillRunTest, ATokenSpentElsewhereBeforeTheCommitRunsNothing) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  const std::string token = Token(tool, args);
  args["confirmToken"] = token;
  runner_.before_commit = [&] { EXPECT_EQ(tokens_->Spend(token, 1000), TokenVerdict::kValid); };
  Json r = Call(tool, args);
  EXPECT_EQ(r["error"], "TOKEN_REUSED") << r.dump();
  EXPECT_EQ(r["status"], "confirmation-rejected");
  EXPECT_TRUE(runner_.started.empty());
}

// A client that does not offer elicitation is never sent an input_required, even when it
// sends a round's requestState and an approving answer: it gets the token flow (docs/wire.md
// §8), and the answer runs nothing.
TEST_F(SkillRunTest, ARetryWithoutTheElicitationCapabilityGetsTheTokenFlow) {
  SkillRunTool tool = Tool();
  Json args = Args("demo", "scripts/run.js");
  const std::string state = RoundState(tool, args);
  RoundCall retry = Retry(state, "accept", true);
  retry.client_elicits = false;
  Json r = Round(tool, args, retry);
  EXPECT_FALSE(asked_.has_value());
  EXPECT_EQ(r.value("status", ""), "confirmation-required") << r.dump();
  EXPECT_TRUE(runner_.started.empty());
  RoundCall answer_only;
  answer_only.input_responses = retry.input_responses;
  EXPECT_EQ(Round(tool, args, answer_only).value("status", ""), "confirmation-required");
  EXPECT_FALSE(asked_.has_value());
  // The state was left alone: the eliciting retry still runs once.
  EXPECT_TRUE(Round(tool, args, Retry(state, "accept", true)).is_null());
  EXPECT_EQ(runner_.started.size(), 1u);
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

// The audit trail (docs/audit.md): one record per call that ends, none for a preview.
TEST_F(SkillRunTest, EachOutcomeWritesOneRecordAndAPreviewNone) {
  SkillRunTool tool = Tool();
  EXPECT_EQ(Call(tool, Args("demo", "scripts/nope.js"))["error"], "SCRIPT_NOT_DECLARED");
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].outcome, AuditOutcome::kRefused);
  EXPECT_EQ(records_[0].refusal, "SCRIPT_NOT_DECLARED");
  EXPECT_FALSE(records_[0].prepared);

  Json args = Args("demo", "scripts/run.js");
  args["args"] = Json::array({"one"});
  const std::string token = Token(tool, args);
  EXPECT_EQ(records_.size(), 1u) << "a preview is a step, not an outcome";
  args["confirmToken"] = token;
  EXPECT_TRUE(Call(tool, args).is_null());
  EXPECT_EQ(records_.size(), 1u) << "nothing is written before the run ends";
  RunResult r;
  r.exit_code = 0;
  r.run_uid = 4242;
  r.duration_ms = 70;
  r.out.Append("abc", 3);
  runner_.done(std::move(r));
  ASSERT_EQ(records_.size(), 2u);
  const AuditFacts& ran = records_[1];
  EXPECT_EQ(ran.outcome, AuditOutcome::kRan);
  EXPECT_EQ(ran.confirm, "token");
  EXPECT_EQ(ran.confirm_wait_ms, 0);  // issued and spent at the same (fake) second
  EXPECT_EQ(ran.run_uid, 4242u);
  EXPECT_EQ(ran.stdout_bytes, 3u);
  EXPECT_EQ(ran.argv, (std::vector<std::string>{"scripts/run.js", "one"}));
  EXPECT_EQ(ran.interpreter_path, "/usr/bin/node");
  EXPECT_EQ(ran.layers, std::vector<std::string>{"seccomp"});
  ASSERT_TRUE(ran.script_sha256);
  EXPECT_EQ(ran.script_sha256->size(), 64u);

  // The same token again: refused, once.
  EXPECT_EQ(Call(tool, args)["error"], "TOKEN_REUSED");
  ASSERT_EQ(records_.size(), 3u);
  EXPECT_EQ(records_[2].refusal, "TOKEN_REUSED");
}

TEST_F(SkillRunTest, HowARunEndedDecidesItsRecord) {
  struct Case {
    std::function<void(RunResult&)> set;
    AuditOutcome want;
  };
  const std::vector<Case> cases = {
      {[](RunResult& r) { r.timed_out = true, r.signal = 15; }, AuditOutcome::kTimedOut},
      {[](RunResult& r) {
         r.memory_kill = MemoryKill{1, 2, 3, 0}, r.signal = 9;
       },
       AuditOutcome::kMemoryKilled},
      {[](RunResult& r) { r.failure = SetupFailure{}; }, AuditOutcome::kSetupFailed},
      {[](RunResult& r) { r.signal = 11; }, AuditOutcome::kRan},
  };
  for (const Case& c : cases) {
    records_.clear();
    SkillRunTool tool = Tool();
    Json args = Args("demo", "scripts/run.js");
    args["confirmToken"] = Token(tool, args);
    ASSERT_TRUE(Call(tool, args).is_null());
    RunResult r;
    c.set(r);
    runner_.done(std::move(r));
    ASSERT_EQ(records_.size(), 1u);
    EXPECT_EQ(records_[0].outcome, c.want) << AuditOutcomeName(c.want);
  }
}

TEST_F(SkillRunTest, ACancelledRunAndOneTheClientLeftAreRecordedCancelledOnce) {
  {
    SkillRunTool tool = Tool();
    Json args = Args("demo", "scripts/run.js");
    args["confirmToken"] = Token(tool, args);
    ASSERT_TRUE(Call(tool, args).is_null());
    tool.Cancel(Json(1));
    EXPECT_EQ(runner_.cancels, 1);
    RunResult r;
    r.signal = 9;
    runner_.done(std::move(r));
    ASSERT_EQ(records_.size(), 1u);
    EXPECT_EQ(records_[0].outcome, AuditOutcome::kCancelled);
  }
  records_.clear();
  {
    SkillRunTool tool = Tool();
    Json args = Args("demo", "scripts/run.js");
    args["confirmToken"] = Token(tool, args);
    ASSERT_TRUE(Call(tool, args).is_null());
  }  // the broker goes with the run in flight: its done never comes
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].outcome, AuditOutcome::kCancelled);
}

TEST_F(SkillRunTest, ADeclinedRoundIsRecordedDeclined) {
  SkillRunTool tool = Tool();
  const Json args = Args("demo", "scripts/run.js");
  const std::string state = RoundState(tool, args);
  EXPECT_TRUE(records_.empty()) << "the prompt is a step, not an outcome";
  Round(tool, args, Retry(state, "decline", false));
  ASSERT_EQ(records_.size(), 1u);
  EXPECT_EQ(records_[0].outcome, AuditOutcome::kDeclined);
  EXPECT_TRUE(records_[0].confirm.empty());
  Round(tool, args, Retry(state, "accept", true));
  RunResult r;
  r.exit_code = 0;
  runner_.done(std::move(r));
  ASSERT_EQ(records_.size(), 2u);
  EXPECT_EQ(records_[1].confirm, "input-required");
}

}  // namespace
}  // namespace skillmcp
