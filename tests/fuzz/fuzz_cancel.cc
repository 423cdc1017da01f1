// libFuzzer entry point for notifications (notifications/cancelled, notifications/progress
// and any other): a real server (fuzz::Server) holds a skill_run whose prompt is open; the
// input is the rest of a notification line after `{"jsonrpc":"2.0",`; then the user
// approves. A notification is never answered (nothing with an id comes back, though the
// server may send notifications of its own); request 2 gets no answer and the run side is
// never asked to start it (counted on the recorder, which sees a start even when its answer
// is suppressed) if the notification cancelled it (requestId 2, the same JSON value), else
// exactly one start and one answer, the dispatch. Then the same notification again while
// request 2's run is in flight (the recorder holds it after the approval): it reaches the
// run side's Cancel exactly when it cancels request 2, and when the run settles request 2
// gets its receipt, or nothing if it was cancelled.
#include <cstddef>
#include <cstdint>
#include <string>

#include "broker/mcp/jsonrpc.h"
#include "tests/fuzz/session_util.h"

namespace {

using namespace skillmcp;

constexpr const char* kApprove =
    "{\"jsonrpc\":\"2.0\",\"id\":\"skill-mcp-1\",\"result\":{\"action\":\"accept\","
    "\"content\":{\"approve\":true}}}\n";

// MCP cancellation, written out independently of server.cc.
bool CancelsTwo(const RpcMessage& m) {
  if (m.method != "notifications/cancelled" || !m.params.is_object()) return false;
  auto id = m.params.find("requestId");
  return id != m.params.end() && *id == Json(2) && id->is_number_integer();
}

// Request 2 approved and its run held in flight; the notification; the run settles.
void WhileRunning(const std::string& line, bool cancels) {
  fuzz::Server server(fuzz::DefaultGate());
  server.recorder().SetRefusal(std::nullopt);
  if (!fuzz::OpenPrompt(server) || !server.Feed(kApprove)) return;
  if (!server.TakeOutput().empty() || !server.recorder().Busy()) __builtin_trap();
  if (!server.Feed(line + "\n")) return;
  for (const Json& out : server.TakeOutput()) {
    if (out.contains("id")) __builtin_trap();  // a notification is never answered
  }
  // Why: cancelling the call whose run is in flight stops it; nothing else reaches it.
  if (server.recorder().cancels() != (cancels ? 1u : 0u)) __builtin_trap();
  RunResult result;
  result.exit_code = 0;
  if (!server.FinishRun(std::move(result))) __builtin_trap();
  std::vector<Json> answers = fuzz::AnswersTo(server.TakeOutput(), Json(2));
  if (answers.size() != (cancels ? 0u : 1u)) __builtin_trap();
  server.Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 30000) return 0;
  std::string line =
      "{\"jsonrpc\":\"2.0\"," + std::string(reinterpret_cast<const char*>(data), size) + "}";
  if (line.find('\n') != std::string::npos) return 0;
  RpcMessage m = ParseRpcLine(line);
  if (m.kind != RpcMessage::Kind::kNotification) return 0;  // requests: fuzz_session
  const bool cancels = CancelsTwo(m);

  fuzz::Server server(fuzz::DefaultGate());
  if (!fuzz::OpenPrompt(server)) return 0;
  if (!server.Feed(line + "\n")) return 0;
  // Why: a notification is never answered, not even with an error (the server may send
  // notifications of its own, e.g. withdrawing the prompt of a cancelled call).
  for (const Json& out : server.TakeOutput()) {
    if (out.contains("id")) __builtin_trap();
  }
  if (!server.Feed(kApprove)) return 0;
  std::vector<Json> out = server.TakeOutput();
  std::vector<Json> answers = fuzz::AnswersTo(out, Json(2));
  const size_t started = server.recorder().starts().size();
  if (cancels) {
    // Why: a cancelled call's prompt is withdrawn, so its approval starts nothing.
    if (!answers.empty() || started != 0) __builtin_trap();
  } else {
    if (answers.size() != 1 || !fuzz::IsDispatched(answers[0]["result"]) || started != 1) {
      __builtin_trap();
    }
  }
  server.Close();
  WhileRunning(line, cancels);
  return 0;
}
