// What the session-level fuzz targets share: one small skill on disk (created once per
// process under $TMPDIR and removed at exit), its catalogue and grants, a confirmation key,
// and a server wired as broker/cli/serve.cc wires it (optionally with skill_run behind a
// DeferredRunTool that holds the session's input until the run side opens), except that
// the run side is a recorder: a Runner (broker/run/runner.h) that by default refuses every
// start, so a dispatched run shows up as a RUN_NOT_STARTED answer naming kRecorderRefusal,
// and nothing is ever executed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "broker/catalogue/skill.h"
#include "broker/confirm/gate_config.h"
#include "broker/confirm/tokens.h"
#include "broker/grants/grants.h"
#include "broker/loop/event_loop.h"
#include "broker/mcp/server.h"
#include "broker/mcp/session.h"
#include "broker/run/runner.h"
#include "broker/tools/deferred_run.h"
#include "broker/tools/skill_run.h"
#include "broker/tools/tool.h"

namespace skillmcp::fuzz {

inline constexpr const char* kSkillName = "demo";
inline constexpr const char* kScript = "scripts/run.js";
inline constexpr const char* kRecorderRefusal = "fuzz recorder, nothing is executed";

// Built on first use, never freed (the fuzzer exits with it).
struct Rig {
  Catalogue catalogue;
  GrantDecision grants;
  std::unique_ptr<ConfirmTokens> tokens;
  CatalogueView view() const { return CatalogueView{&catalogue, &grants}; }
};
Rig& GetRig();

// True when a tools/call answer (the MCP result object) is the recorder's refusal, i.e.
// skill_run got past the gate and asked the supervisor to start the script.
bool IsDispatched(const Json& tool_result);

// The run side: records every run skill_run hands over (its arguments, in order) and, by
// default, refuses each (kRecorderRefusal), so nothing runs. Told to hold, it accepts the
// next start instead and keeps its Done until Finish, so the run is in flight meanwhile
// (Busy, Cancel) and its result is whatever the caller makes up. Nothing is executed.
class RecorderRunner : public Runner {
 public:
  struct Started {
    std::vector<std::string> args;  // the argv after the script
    bool held = false;              // accepted and in flight (else refused)
  };
  bool Busy() const override { return done_ != nullptr; }
  std::optional<StartRefusal> StartCommitted(PreparedRun run, Commit commit, Done on_done) override;
  void Cancel() override { ++cancels_; }

  // nullopt: hold the next start; else refuse it with this.
  void SetRefusal(std::optional<StartRefusal> refusal) { refusal_ = std::move(refusal); }
  // Settles the run in flight with `result` (its Done is called); false when none is.
  bool Finish(RunResult result);
  // Every start, oldest first; how often Cancel was called.
  const std::vector<Started>& starts() const { return starts_; }
  size_t cancels() const { return cancels_; }
  size_t started = 0;  // starts().size(), kept for fuzz_tool_args

 private:
  std::optional<StartRefusal> refusal_ =
      StartRefusal{StartProblem::kUnavailable, kRecorderRefusal, 0};
  std::vector<Started> starts_;
  Done done_;
  size_t cancels_ = 0;
};

// One server: loop, session over a pipe (client -> server) and a memfd (server -> client),
// supervisor, skill_run and McpServer, all fresh, as in serve.cc. `deferred`: skill_run
// sits behind a DeferredRunTool wired to Session::HoldInput/ReleaseInput, as serve.cc
// does while the run side is undecided, until OpenRunSide.
class Server {
 public:
  explicit Server(GateConfig gate, int64_t now = 1'800'000'000, bool deferred = false);
  ~Server();
  bool ok() const { return ok_; }
  // Writes `lines` to the server's input and runs the loop until nothing is left to do.
  // False when the input could not be written (then the caller skips the input).
  bool Feed(std::string_view lines);
  // Closes the input (client gone) and runs the loop until the session has closed.
  void Close();
  // Every line written since the last call, parsed; a line that does not parse traps.
  std::vector<Json> TakeOutput();
  // skill_run's clock (unix seconds), which the caller may move forward.
  int64_t now() const { return now_; }
  void Advance(int64_t seconds) { now_ += seconds; }
  // The run side (what it was asked to start so far; how it answers the next start).
  RecorderRunner& recorder() { return *runner_; }
  // Settles the run the recorder holds and runs the loop; false when none is held.
  bool FinishRun(RunResult result);
  // nullopt: a prompt waits kElicitationTimeoutMs for its answer, as in serve.cc; else
  // this long (0: it times out on the next loop round).
  void SetPromptTimeoutMs(std::optional<int64_t> ms) { prompt_timeout_ms_ = ms; }
  // Gives the DeferredRunTool its skill_run (the waiting call goes first, then the held
  // input is read) and runs the loop; false when the run side was open already.
  bool OpenRunSide();

 private:
  void Drain();
  bool ok_ = false;
  int in_read_ = -1, in_write_ = -1, out_ = -1;
  size_t out_read_ = 0;
  int64_t now_;
  std::optional<int64_t> prompt_timeout_ms_;
  // Its own key and spent set, so no input sees another one's spends.
  std::unique_ptr<ConfirmTokens> tokens_;
  EventLoop loop_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<RecorderRunner> runner_;
  std::unique_ptr<SkillRunTool> run_tool_;       // when not deferred
  std::unique_ptr<DeferredRunTool> run_gate_;    // when deferred
  SkillRunDeps deps_;                            // ... until it opens
  std::unique_ptr<McpServer> server_;
};

// The gate as the default configuration has it.
GateConfig DefaultGate();

}  // namespace skillmcp::fuzz
