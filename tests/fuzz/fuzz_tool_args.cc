// libFuzzer entry point for the tool arguments a client sends in tools/call, after the JSON
// is parsed: the first byte picks the tool, the rest is the `arguments` value. The line is
// classified by the server's own ParseRpcLine (its size and nesting limits), then handed to
// the same functions McpServer::CallTool calls: SkillLoad, SkillFile, or skill_run (gate in
// token mode, run side a recorder). Every outcome is exactly one tool result that
// serialises as the server serialises it; no input makes skill_run dispatch (the recorder
// is never asked to start anything) without a token it issued.
#include <cstddef>
#include <cstdint>
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

SkillRunTool& RunTool() {
  static SkillRunTool* tool = [] {
    SkillRunDeps deps;
    deps.view = fuzz::GetRig().view();
    deps.is_set = [](std::string_view name) { return name == "FUZZ_GREETING"; };
    deps.tokens = fuzz::GetRig().tokens.get();
    deps.runner = Recorder();
    deps.elicit = [](OrderedJson, int64_t, std::function<void(const Json*, const Json*)>) -> Json {
      __builtin_trap();  // the client did not declare elicitation: never prompted
    };
    deps.now = [] { return int64_t{1'800'000'000}; };
    return new SkillRunTool(std::move(deps));
  }();
  return *tool;
}

void Emit(ToolResult result) {
  // What McpServer::CallTool writes: the MCP result as JSON text (it must not throw).
  JsonParts parts = ToolResultJson(std::move(result));
  if (parts.head.empty() || parts.tail.empty()) __builtin_trap();
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
  auto a = m.params.find("arguments");
  // McpServer::CallTool answers a non-object itself; only objects reach the tools.
  if (a == m.params.end() || !a->is_object()) return 0;
  const Json& args = *a;
  const fuzz::Rig& rig = fuzz::GetRig();
  switch (data[0] % 3) {
    case 0:
      Emit(SkillLoad(rig.view(), args));
      break;
    case 1:
      Emit(SkillFile(rig.view(), args));
      break;
    case 2: {
      int answers = 0;
      RunTool().Call(args, m.id, /*client_elicits=*/false, [&answers](ToolResult r) {
        ++answers;
        Emit(std::move(r));
      });
      if (answers != 1) __builtin_trap();  // exactly one answer, synchronously
      // Why: no client-made token is genuine, so nothing may reach the supervisor. The
      // recorder counts every start it is asked for (cheaper and more direct than parsing
      // the answer back for its refusal).
      if (Recorder()->started != 0) __builtin_trap();
      break;
    }
  }
  return 0;
}
