// DeferredRunTool: skill_run calls that arrive before the run side is decided wait, with
// the session's input held, and reach the real handler in order once it is opened.
#include "broker/tools/deferred_run.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skillmcp {
namespace {

// Records what reaches it and answers at once with the call's "n".
class FakeRun : public RunToolHandler {
 public:
  explicit FakeRun(std::vector<std::string>* log) : log_(log) {}
  void Call(const Json& args, const Json& id, bool, ToolDone done) override {
    log_->push_back("call " + id.dump());
    ToolResult r;
    r.payload = OrderedJson{{"n", args.value("n", 0)}};
    done(std::move(r));
  }
  void CallRound(const Json& args, const Json& id, const RoundCall& round, ToolDone done,
                 AskDone) override {
    log_->push_back("round " + id.dump() + " " + round.request_state.dump());
    ToolResult r;
    r.payload = OrderedJson{{"n", args.value("n", 0)}};
    done(std::move(r));
  }
  void Cancel(const Json& id) override { log_->push_back("cancel " + id.dump()); }

 private:
  std::vector<std::string>* log_;
};

struct Fixture {
  std::vector<std::string> log;
  DeferredRunTool gate{[this] { log.push_back("hold"); }, [this] { log.push_back("release"); }};
  ToolDone Done(int expect) {
    return [this, expect](ToolResult r) {
      log.push_back("done " + std::to_string(r.payload.value("n", -1)) +
                    (r.payload.value("n", -1) == expect ? "" : " (wrong call)"));
    };
  }
};

TEST(DeferredRunTool, CallsWaitWithInputHeldThenRunInOrder) {
  Fixture f;
  f.gate.Call(Json{{"n", 1}}, 1, false, f.Done(1));
  f.gate.Call(Json{{"n", 2}}, 2, false, f.Done(2));
  EXPECT_EQ(f.log, (std::vector<std::string>{"hold"})) << "nothing runs before Open";
  f.gate.Open(std::make_unique<FakeRun>(&f.log));
  EXPECT_EQ(f.log, (std::vector<std::string>{"hold", "call 1", "done 1", "call 2", "done 2",
                                             "release"}));
  // Open: calls go straight through, nothing is held again.
  f.gate.Call(Json{{"n", 3}}, 3, false, f.Done(3));
  f.gate.Cancel(3);
  EXPECT_EQ(f.log.back(), "cancel 3");
  EXPECT_EQ(std::count(f.log.begin(), f.log.end(), "hold"), 1);
}

TEST(DeferredRunTool, AWaitingCallCancelledIsDroppedAndTheInputStillReleased) {
  Fixture f;
  f.gate.Call(Json{{"n", 1}}, 1, false, f.Done(1));
  f.gate.Cancel(1);
  f.gate.Open(std::make_unique<FakeRun>(&f.log));
  EXPECT_EQ(f.log, (std::vector<std::string>{"hold", "release"}));
}

TEST(DeferredRunTool, OpenedBeforeAnyCallNeverHolds) {
  Fixture f;
  f.gate.Open(std::make_unique<FakeRun>(&f.log));
  f.gate.Call(Json{{"n", 4}}, 4, false, f.Done(4));
  EXPECT_EQ(f.log, (std::vector<std::string>{"call 4", "done 4"}));
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

// A 2026-07-28 call that waits reaches the handler as a round, with its state, not as a
// 2025 call (which would drop the user's answer and the round's prompt).
TEST(DeferredRunTool, ARoundThatWaitsStaysARound) {
  Fixture f;
  RoundCall round;
  round.request_state = "state-1";
  f.gate.CallRound(Json{{"n", 4}}, 4, round, f.Done(4), [](OrderedJson) {});
  f.gate.Open(std::make_unique<FakeRun>(&f.log));
  EXPECT_EQ(f.log, (std::vector<std::string>{"hold", "round 4 \"state-1\"", "done 4",
                                             "release"}));
}

}  // namespace
}  // namespace skillmcp
