// libFuzzer entry point for the tool arguments a client sends in tools/call, after the JSON
// is parsed: the first byte picks the tool, the rest is the `arguments` value. The line is
// classified by the server's own ParseRpcLine (its size and nesting limits), then handed to
// the same functions McpServer::CallTool calls (absent or null `arguments` as {}, as it
// does): SkillLoad, SkillFile, or skill_run with the run side a recorder. For skill_run the
// first byte also picks whether the client declared elicitation, the gate's mode
// (ask-user, auto, refuse), MCP_CONFIRM_ELICITATION on or off, an unreadable configuration,
// and the user's answer to a prompt (CallRun). Every outcome is exactly one tool result
// that serialises as the server serialises it; a prompt is opened only when client and
// configuration allow one; nothing reaches the recorder but a run the user approved
// (no client-made token is genuine).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "broker/mcp/jsonrpc.h"
#include "broker/tools/read_tools.h"
#include "tests/fuzz/rig.h"

namespace {

using namespace skillmcp;

fuzz::RecorderRunner* Recorder() {
  static fuzz::RecorderRunner* runner = new fuzz::RecorderRunner();
  return runner;
}

// The prompt skill_run opened during the current input, if any: the harness answers it.
struct Prompt {
  int opened = 0;
  std::function<void(const Json*, const Json*)> answer;
};
Prompt& CurrentPrompt() {
  static Prompt prompt;
  return prompt;
}

// The gate settings one input runs under, from the byte after the tool choice
// (MCP_CONFIRM_MODE, MCP_CONFIRM_ELICITATION, an unreadable configuration).
GateConfig GateFor(uint8_t g) {
  static const ConfirmMode kModes[] = {ConfirmMode::kAskUser, ConfirmMode::kAuto,
                                       ConfirmMode::kRefuse};
  GateConfig gate;
  gate.mode = kModes[(g >> 1) % 3];
  gate.elicitation = ((g >> 3) & 1) == 0;
  if ((g >> 4) & 1) gate.refusal = "fuzz: MCP_CONFIRM_TTL_SECONDS could not be read";
  return gate;
}

// One skill_run per gate setting (they keep no state between inputs once every prompt is
// answered), sharing the recorder.
SkillRunTool& RunTool(uint8_t g) {
  // Plain pointers in static storage, never freed: still reachable at exit, so
  // LeakSanitizer (the sanitized replay, a libFuzzer run) does not count them as leaks.
  static SkillRunTool* tools[16] = {};
  SkillRunTool*& tool = tools[((g >> 1) % 3) | (((g >> 3) & 3) << 2)];
  if (tool == nullptr) {
    SkillRunDeps deps;
    deps.view = fuzz::GetRig().view();
    deps.is_set = [](std::string_view name) { return name == "FUZZ_GREETING"; };
    deps.gate = GateFor(g);
    deps.tokens = fuzz::GetRig().tokens.get();
    deps.runner = Recorder();
    deps.elicit = [](OrderedJson, int64_t,
                     std::function<void(const Json*, const Json*)> handler) -> Json {
      ++CurrentPrompt().opened;
      CurrentPrompt().answer = std::move(handler);
      return Json("fuzz-prompt");
    };
    deps.withdraw = [](const Json&) { __builtin_trap(); };  // nothing cancels here
    deps.now = [] { return int64_t{1'800'000'000}; };
    tool = new SkillRunTool(std::move(deps));
  }
  return *tool;
}

void Emit(ToolResult result) {
  // What McpServer::CallTool writes: the MCP result as JSON text (it must not throw).
  JsonParts parts = ToolResultJson(std::move(result));
  if (parts.head.empty() || parts.tail.empty()) __builtin_trap();
}

// skill_run under the gate `g` picks: bit 0 whether the client declared elicitation, the
// rest GateFor, bits 5-6 how the user answers a prompt (approve, decline, an error).
void CallRun(const Json& args, const Json& id, uint8_t g) {
  const bool client_elicits = (g & 1) != 0;
  const GateConfig gate = GateFor(g);
  const size_t started = Recorder()->started;
  Prompt& prompt = CurrentPrompt();
  prompt = Prompt();
  int answers = 0;
  RunTool(g).Call(args, id, client_elicits, [&answers](ToolResult r) {
    ++answers;
    Emit(std::move(r));
  });
  // Why: the user is asked only when the client can show a prompt and the configuration
  // allows it (docs/wire.md §6); nobody else can approve.
  if (prompt.opened > 1) __builtin_trap();
  if (prompt.opened == 1 && !(client_elicits && gate.elicitation && !gate.refusal)) {
    __builtin_trap();
  }
  bool approved = false;
  if (prompt.opened == 1) {
    if (answers != 0) __builtin_trap();  // the call waits for the user
    const int how = (g >> 5) % 3;
    const Json accept = {{"action", "accept"}, {"content", {{"approve", true}}}};
    const Json decline = {{"action", "decline"}};
    const Json error = {{"code", -32603}, {"message", "fuzz"}};
    approved = how == 0;
    if (how == 2) {
      prompt.answer(nullptr, &error);
    } else {
      prompt.answer(approved ? &accept : &decline, nullptr);
    }
  }
  if (answers != 1) __builtin_trap();  // exactly one answer
  // Why: no client-made token is genuine, so only a prompt the user approved may reach the
  // supervisor, and then once. The recorder counts every start it is asked for.
  const size_t runs = Recorder()->started - started;
  if (runs > (approved ? 1u : 0u)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 100000) return 0;
  static const char* const kTools[] = {"skill_load", "skill_file", "skill_run"};
  const char* tool = kTools[data[0] % 3];
  std::string line =
      std::string(
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
          "\"params\":{\"name\":\"") +
      tool + "\",\"arguments\":" + std::string(reinterpret_cast<const char*>(data) + 1, size - 1) +
      "}}";
  RpcMessage m = ParseRpcLine(line);
  if (m.kind != RpcMessage::Kind::kRequest || !m.params.is_object()) return 0;
  // As McpServer::CallTool: absent or null arguments are {}, any other non-object is
  // answered there without reaching a tool.
  Json args = Json::object();
  if (auto a = m.params.find("arguments"); a != m.params.end() && !a->is_null()) {
    if (!a->is_object()) return 0;
    args = *a;
  }
  const fuzz::Rig& rig = fuzz::GetRig();
  switch (data[0] % 3) {
    case 0:
      Emit(SkillLoad(rig.view(), args));
      break;
    case 1:
      Emit(SkillFile(rig.view(), args));
      break;
    case 2:
      // '2' (the seeds' first byte) runs the default gate for a client without elicitation.
      CallRun(args, m.id, static_cast<uint8_t>(data[0] - '0') / 3);
      break;
  }
  return 0;
}
