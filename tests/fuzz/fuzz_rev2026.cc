// libFuzzer target for the 2026-07-28 path (docs/wire.md §8): the `_meta` envelope of any
// request, and the requestState / inputResponses of a skill_run retry, sent to a real
// server (fuzz::Server: Session + McpServer + skill_run as serve.cc wires them, the run side
// a recorder). The first byte picks the mode:
//   even: `{"jsonrpc":"2.0","id":1,"method":<second byte picks>,"params":{"_meta":<rest>}}`.
//         When the line is a request, it gets exactly one answer, judged by the table of
//         docs/wire.md §8 written out here (Judge; not the server's ReadEnvelope): the error
//         code of an unusable envelope (-32602, -32022 with `requested`, -32601 for 2026
//         initialize/ping), a 2026 result stamped with resultType and serverInfo, a 2025
//         one never stamped; the server then still answers a well-formed server/discover.
//   odd:  a skill_run round is opened with a valid envelope and the elicitation capability;
//         the retry carries the rest as requestState (bit 1: the genuine state with the
//         rest appended, else the rest as raw JSON), the rest as inputResponses (bit 2:
//         raw JSON, else an approving answer), and the same or other arguments (bit 3).
//         The script is dispatched if and only if the state is the genuine one, unspent,
//         for the same arguments, and the answer approves; the same retry again never
//         dispatches.
// In both modes the server never sends a request to the client.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/rig.h"
#include "tests/fuzz/session_util.h"

namespace {

using namespace skillmcp;

constexpr const char* kEnvelope =
    "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}}";
const char* const kMethods[] = {"server/discover", "tools/list", "tools/call",
                                "resources/read",  "ping",       "initialize",
                                "skills/list",     "prompts/get"};
const char* const kArgs[] = {"[\"a\"]", "[\"b\"]"};

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// No line the server wrote is a request of its own (2026-07-28 has none).
void NoServerRequests(const std::vector<Json>& out) {
  for (const Json& line : out) Check(!(line.contains("method") && line.contains("id")));
}

std::string RunCall(int id, int args, const std::string& extra) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
         ",\"method\":\"tools/call\",\"params\":{\"name\":\"skill_run\",\"arguments\":{\"name\":"
         "\"demo\",\"script\":\"scripts/run.js\",\"args\":" +
         kArgs[args] + "},\"_meta\":" + kEnvelope + extra + "}}\n";
}

// What docs/wire.md §8 says a fresh connection (no initialize, era not fixed) must answer
// to one request, written from the table there and NOT from the server's ReadEnvelope, so
// the two can disagree. kServe: the method's own answer (a result, or the method's error).
struct Expected {
  enum class Kind { kServe2025, kServe2026, kError } kind = Kind::kServe2025;
  int code = 0;            // kError: the JSON-RPC error code
  std::string requested;   // -32022: data.requested
};

Expected Judge(const std::string& method, const Json& params) {
  const char* const kVersion = "io.modelcontextprotocol/protocolVersion";
  const char* const kCaps = "io.modelcontextprotocol/clientCapabilities";
  Expected want;
  const Json* meta = nullptr;
  if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()) {
    meta = &params["_meta"];
  }
  if (meta == nullptr || !meta->contains(kVersion)) {
    // "Without that key a request is a 2025 one", except the probe, which needs it.
    if (method == "server/discover") want = {Expected::Kind::kError, -32602, ""};
    return want;
  }
  const Json& version = (*meta)[kVersion];
  if (!version.is_string()) return {Expected::Kind::kError, -32602, ""};
  if (version.get<std::string>() != "2026-07-28") {
    return {Expected::Kind::kError, -32022, version.get<std::string>()};
  }
  if (!meta->contains(kCaps) || !(*meta)[kCaps].is_object()) {
    return {Expected::Kind::kError, -32602, ""};
  }
  // "2026 initialize or ping (removed by the revision)": -32601.
  if (method == "initialize" || method == "ping") return {Expected::Kind::kError, -32601, ""};
  want.kind = Expected::Kind::kServe2026;
  return want;
}

bool CarriesServerInfo(const Json& result) {
  auto meta = result.find("_meta");
  return meta != result.end() && meta->is_object() &&
         meta->contains("io.modelcontextprotocol/serverInfo");
}

void CheckAnswer(const Expected& want, const Json& answer) {
  if (want.kind == Expected::Kind::kError) {
    Check(answer.contains("error") && !answer.contains("result") && answer["error"].is_object());
    Check(answer["error"].value("code", 0) == want.code);
    if (want.code == -32022) {
      const Json& data = answer["error"].value("data", Json());
      Check(data.is_object() && data.value("requested", Json()) == Json(want.requested) &&
            data.value("supported", Json()) == Json::array({"2026-07-28"}));
    }
    return;
  }
  if (!answer.contains("result")) return;  // the method's own refusal, in either era
  const Json& result = answer["result"];
  Check(result.is_object());
  if (want.kind == Expected::Kind::kServe2026) {
    // "Every 2026 result starts with resultType ... then _meta: {serverInfo}".
    Check(result.contains("resultType") && result["resultType"].is_string());
    Check(CarriesServerInfo(result));
  } else {
    // "not one byte of what a 2024-11-05 ... 2025-11-25 client sees moved".
    Check(!CarriesServerInfo(result));
  }
}

void FuzzMeta(fuzz::Server& server, uint8_t pick, std::string_view rest) {
  const std::string method = kMethods[pick % std::size(kMethods)];
  const std::string line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"" + method +
                           "\",\"params\":{\"uri\":\"skill://demo/SKILL.md\",\"name\":\"demo\","
                           "\"_meta\":" +
                           std::string(rest) + "}}\n";
  if (!server.Feed(line)) return;
  std::vector<Json> out = server.TakeOutput();
  NoServerRequests(out);
  RpcMessage m = ParseRpcLine(std::string_view(line).substr(0, line.size() - 1));
  if (m.kind == RpcMessage::Kind::kRequest) {
    std::vector<Json> answers = fuzz::AnswersTo(out, m.id);
    Check(answers.size() == 1);
    // The rest may close params early and name another method or id: judged only when
    // the request is the one built here.
    if (m.method == method && m.id == Json(1)) CheckAnswer(Judge(method, m.params), answers[0]);
  }
  // Alive, whatever era the input left the connection in (no initialize was sent).
  const std::string probe = std::string("{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":") +
                            "\"server/discover\",\"params\":{\"_meta\":" + kEnvelope + "}}\n";
  Check(server.Feed(probe));
  std::vector<Json> alive = fuzz::AnswersTo(server.TakeOutput(), Json(99));
  // An initialize with a usable _meta fixes 2025, and then the probe is refused (-32022).
  Check(alive.size() == 1);
}

bool Approves(const Json& params) {
  auto r = params.find("inputResponses");
  if (r == params.end() || !r->is_object()) return false;
  auto c = r->find("confirm");
  if (c == r->end() || !c->is_object()) return false;
  auto action = c->find("action");
  auto content = c->find("content");
  return action != c->end() && *action == "accept" && content != c->end() && content->is_object() &&
         content->contains("approve") && (*content)["approve"] == true;
}

void FuzzRetry(fuzz::Server& server, uint8_t flags, std::string_view rest) {
  if (!server.Feed(RunCall(2, 0, ""))) return;
  std::vector<Json> out = server.TakeOutput();
  NoServerRequests(out);
  std::vector<Json> first = fuzz::AnswersTo(out, Json(2));
  Check(first.size() == 1 && first[0].contains("result"));
  const Json& round = first[0]["result"];
  Check(round.value("resultType", "") == "input_required" && round["requestState"].is_string());
  const std::string genuine = round["requestState"].get<std::string>();

  const std::string state =
      (flags & 2)
          ? Json(genuine + std::string(rest)).dump(-1, ' ', false, Json::error_handler_t::replace)
          : std::string(rest.empty() ? "null" : rest);
  const std::string responses =
      (flags & 4)
          ? std::string(rest.empty() ? "{}" : rest)
          : std::string("{\"confirm\":{\"action\":\"accept\",\"content\":{\"approve\":true}}}");
  const int args = (flags & 8) ? 1 : 0;
  const std::string extra = ",\"requestState\":" + state + ",\"inputResponses\":" + responses;
  for (int id : {3, 4}) {
    const std::string line = RunCall(id, args, extra);
    if (!server.Feed(line)) return;
    out = server.TakeOutput();
    NoServerRequests(out);
    RpcMessage m = ParseRpcLine(std::string_view(line).substr(0, line.size() - 1));
    std::vector<Json> answers = fuzz::AnswersTo(out, Json(id));
    bool dispatched = false;
    if (m.kind == RpcMessage::Kind::kRequest) {
      Check(answers.size() == 1);
      dispatched = answers[0].contains("result") && fuzz::IsDispatched(answers[0]["result"]);
    }
    const bool may = id == 3 && m.kind == RpcMessage::Kind::kRequest && args == 0 &&
                     m.params.value("requestState", Json()) == Json(genuine) && Approves(m.params);
    // Why both ways: an approved, genuine, unspent round must run, and nothing else may.
    Check(dispatched == may);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  fuzz::Server server(fuzz::DefaultGate());
  if (!server.ok()) return 0;
  // One message per line: a line break inside the rest would make it two, which the
  // checks (made on the whole line) do not model; it becomes a space, JSON whitespace.
  std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  for (char& c : rest) {
    if (c == '\n') c = ' ';
  }
  if ((data[0] & 1) == 0) {
    FuzzMeta(server, data[1], rest);
  } else {
    FuzzRetry(server, data[0], rest);
  }
  server.Close();
  return 0;
}
