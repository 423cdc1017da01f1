// libFuzzer entry point for elicitation answers: a real server (fuzz::Server, wired as
// serve.cc wires it) has sent elicitation/create for a skill_run; the input is the rest of
// the client's answer line after `{"jsonrpc":"2.0","id":"skill-mcp-1",`. The script is
// dispatched if and only if the line is a response carrying no error and a result with
// action "accept" and content.approve === true; a response gets exactly one tools/call
// answer, anything else none.
#include <cstddef>
#include <cstdint>
#include <string>

#include "broker/mcp/jsonrpc.h"
#include "tests/fuzz/session_util.h"

namespace {

using namespace skillmcp;

// The approval rule of SPEC section 6, written out independently of skill_run.cc.
bool Approves(const Json& line) {
  if (!line.is_object()) return false;
  if (line.contains("error") && !line["error"].is_null()) return false;
  auto result = line.find("result");
  if (result == line.end() || !result->is_object()) return false;
  auto action = result->find("action");
  auto content = result->find("content");
  if (action == result->end() || *action != "accept") return false;
  if (content == result->end() || !content->is_object()) return false;
  auto approve = content->find("approve");
  return approve != content->end() && approve->is_boolean() && approve->get<bool>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 30000) return 0;
  std::string line = std::string("{\"jsonrpc\":\"2.0\",\"id\":\"") + fuzz::kPromptId + "\"," +
                     std::string(reinterpret_cast<const char*>(data), size) + "}";
  if (line.find('\n') != std::string::npos) return 0;  // one line; framing is jsonrpc's
  RpcMessage m = ParseRpcLine(line);
  // A repeated "id" key can point the answer elsewhere: only one to the prompt counts.
  const bool response = m.kind == RpcMessage::Kind::kResponse && m.id == fuzz::kPromptId;
  const bool approves = response && Approves(Json::parse(line, nullptr, false));

  fuzz::Server server(fuzz::DefaultGate());
  if (!fuzz::OpenPrompt(server)) return 0;
  if (!server.Feed(line + "\n")) return 0;
  std::vector<Json> out = server.TakeOutput();
  server.Close();
  std::vector<Json> after = server.TakeOutput();
  out.insert(out.end(), after.begin(), after.end());

  std::vector<Json> answers = fuzz::AnswersTo(out, Json(2));
  if (answers.size() != (response ? 1u : 0u)) __builtin_trap();
  const bool dispatched =
      response && answers[0].contains("result") && fuzz::IsDispatched(answers[0]["result"]);
  if (dispatched != approves) __builtin_trap();
  return 0;
}
