// Structure-aware libFuzzer target for whole sessions: the input is decoded into a sequence
// of client messages (initialize, tool calls with or without a token the server issued,
// elicitation answers, cancellations, notifications, cut-off lines, answers to unknown
// ids) sent one by one to a real server (fuzz::Server: Session + McpServer + skill_run as
// serve.cc wires them, the run side a recorder). After every message it checks:
//   - every answer names a request still waiting for one, and none is answered twice;
//   - a notification or an answer of the client's is never answered;
//   - the run side is asked to start a run (counted on the recorder, whether or not an
//     answer shows it) only for a request carrying an unspent, unexpired token the server
//     issued for the same arguments, or one whose live prompt the client accepted with
//     approve: true, never for a cancelled request (the clock moves forward on demand);
//     every start is answered as dispatched, and every dispatched answer had its start;
//   - the server asks elicitation/create only while serving a skill_run;
//   - at the end, once every live prompt is declined, no request is still owed an answer
//     (exactly one answer per request, not just at most one), and the server still
//     answers a ping (alive).
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/fuzz/rig.h"

namespace {

using namespace skillmcp;

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

const char* const kArgs[] = {"[\"a\"]", "[]", "[\"b\",\"c\"]", "[\"x\\u0000\"]"};
// The same argument lists as the run side receives them.
const std::vector<std::string> kArgVectors[] = {
    {"a"}, {}, {"b", "c"}, {std::string("x\0", 2)}};

struct Token {
  std::string text;
  int args = 0;
  int64_t issued_at = 0;  // skill_run's clock when it was issued
  bool used = false;
};

class Model {
 public:
  explicit Model(Bytes bytes) : in_(bytes) {}
  void Run();

 private:
  Json MakeId(uint8_t b) const { return (b & 8) ? Json("r" + std::to_string(b & 7)) : Json(b & 7); }
  void Send(const std::string& line, bool may_fail_parse = false);
  void Request(const Json& id, const std::string& method, const std::string& params);
  void Observe(const std::vector<Json>& out, bool may_fail_parse);
  void OnAnswer(const Json& line);
  void RecordTokens(const Json& result, const std::string& id_key);
  void CheckStarts();
  void Finish();

  void Initialize();
  void CallRun();
  void CallRead();
  void AnswerPrompt();
  void Cancel();
  void CutLine();
  void Other();
  void Wait() { server_.Advance(8 * in_.Next()); }  // up to 34 minutes later

  Bytes in_;
  fuzz::Server server_{fuzz::DefaultGate()};
  std::map<std::string, int> waiting_;                      // request id (dumped) -> answers owed
  std::map<std::string, int> run_args_;                     // skill_run request id -> args variant
  std::map<std::string, std::optional<size_t>> run_token_;  // ... -> token used, if any
  std::vector<Token> tokens_;
  std::vector<std::string> prompt_ids_;         // every prompt id the server sent
  std::map<std::string, std::string> prompts_;  // live prompt id -> request id
  std::optional<std::string> serving_run_;      // the skill_run this message is
  // This step: the requests that may start a run (a valid token, an approved live prompt),
  // and the ones answered as dispatched.
  std::vector<std::string> may_start_;
  std::set<std::string> dispatched_;
  size_t starts_seen_ = 0;  // recorder starts already matched to a request
};

void Model::Send(const std::string& line, bool may_fail_parse) {
  if (!server_.Feed(line + "\n")) __builtin_trap();
  Observe(server_.TakeOutput(), may_fail_parse);
}

void Model::Request(const Json& id, const std::string& method, const std::string& params) {
  int& owed = waiting_[id.dump()];
  // A request reusing the id of one still in flight is dropped unanswered (session.cc),
  // except an unknown method, which the session answers before it looks at the id.
  if (owed == 0 || method == "no/such/method") owed += 1;
  Send("{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() + ",\"method\":\"" + method +
       "\",\"params\":" + params + "}");
}

void Model::Observe(const std::vector<Json>& out, bool may_fail_parse) {
  for (const Json& line : out) {
    if (line.contains("method")) {
      if (!line.contains("id")) continue;  // a notification of the server's
      // Why: the server only ever asks the user while serving a skill_run.
      if (line["method"] != "elicitation/create" || !serving_run_) __builtin_trap();
      prompts_[line["id"].dump()] = *serving_run_;
      prompt_ids_.push_back(line["id"].dump());
      continue;
    }
    if (!line.contains("id") || line["id"].is_null()) {
      if (!may_fail_parse) __builtin_trap();  // a parse error only for a broken line
      continue;
    }
    OnAnswer(line);
  }
}

void Model::OnAnswer(const Json& line) {
  const std::string key = line["id"].dump();
  auto it = waiting_.find(key);
  // Why: one answer per request; nothing else is ever answered.
  if (it == waiting_.end() || it->second <= 0) __builtin_trap();
  it->second -= 1;
  if (!line.contains("result")) return;
  const Json& result = line["result"];
  if (fuzz::IsDispatched(result)) dispatched_.insert(key);
  RecordTokens(result, key);
}

// After every step: each run the recorder was asked to start belongs to a request this
// step allowed to start one, with the same arguments, and was answered as dispatched; each
// dispatched answer had its start.
void Model::CheckStarts() {
  const auto& starts = server_.recorder().starts();
  std::set<std::string> started;
  for (; starts_seen_ < starts.size(); ++starts_seen_) {
    auto it = may_start_.begin();
    while (it != may_start_.end() && kArgVectors[run_args_[*it]] != starts[starts_seen_]) ++it;
    // Why: nothing runs without a valid token or an accepted live prompt.
    if (it == may_start_.end()) __builtin_trap();
    if (run_token_[*it]) tokens_[*run_token_[*it]].used = true;
    started.insert(*it);
    may_start_.erase(it);
  }
  if (started != dispatched_) __builtin_trap();
  may_start_.clear();
  dispatched_.clear();
}

void Model::RecordTokens(const Json& result, const std::string& id_key) {
  if (!result.contains("content") || !result["content"].is_array() || result["content"].empty())
    return;
  const Json& block = result["content"][0];
  if (!block.contains("text") || !block["text"].is_string()) return;
  Json payload = Json::parse(block["text"].get<std::string>(), nullptr, false);
  if (!payload.is_object() || !payload.contains("confirmToken")) return;
  auto args = run_args_.find(id_key);
  if (args == run_args_.end()) __builtin_trap();  // a token only answers skill_run
  tokens_.push_back(Token{payload["confirmToken"].get<std::string>(), args->second, server_.now()});
}

void Model::Initialize() {
  const uint8_t b = in_.Next();
  const std::string caps = (b & 16) ? "{\"elicitation\":{}}" : "{}";
  Request(MakeId(b), "initialize",
          "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":" + caps + "}");
}

void Model::CallRun() {
  const uint8_t b = in_.Next();
  const uint8_t t = in_.Next();
  const Json id = MakeId(b);
  const std::string key = id.dump();
  const int args = (b >> 4) & 3;
  std::string token;
  std::optional<size_t> used;
  if ((t & 3) == 1 && !tokens_.empty()) {
    used = (t >> 2) % tokens_.size();
    token = ",\"confirmToken\":" + Json(tokens_[*used].text).dump();
  } else if ((t & 3) == 2) {
    token = ",\"confirmToken\":\"AAAA.BBBB\"";
  }
  // Only when no other request under this id is still waiting (else it is dropped).
  if (waiting_[key] == 0) {
    run_args_[key] = args;
    run_token_[key] = used;
    // Why: only an unspent, unexpired token issued for these very arguments runs.
    if (used && !tokens_[*used].used && tokens_[*used].args == args &&
        server_.now() < tokens_[*used].issued_at + fuzz::DefaultGate().ttl_seconds) {
      may_start_.push_back(key);
    }
  }
  serving_run_ = key;
  Request(id, "tools/call",
          "{\"name\":\"skill_run\",\"arguments\":{\"name\":\"demo\",\"script\":"
          "\"scripts/run.js\",\"args\":" +
              std::string(kArgs[args]) + token + "}}");
  serving_run_.reset();
}

void Model::CallRead() {
  const uint8_t b = in_.Next();
  static const char* const kCalls[] = {
      "{\"name\":\"skill_list\"}", "{\"name\":\"skill_load\",\"arguments\":{\"name\":\"demo\"}}",
      "{\"name\":\"skill_file\",\"arguments\":{\"name\":\"demo\",\"paths\":[\"SKILL.md\"]}}",
      "{\"name\":\"skill_nope\"}"};
  static const char* const kMethods[] = {"tools/call", "tools/list", "resources/read",
                                         "prompts/get"};
  const int which = (b >> 4) & 3;
  std::string params = kCalls[(b >> 6) & 3];
  if (which == 2) params = "{\"uri\":\"skill://demo/SKILL.md\"}";
  if (which == 3) params = "{\"name\":\"demo\"}";
  Request(MakeId(b), kMethods[which], params);
}

void Model::AnswerPrompt() {
  const uint8_t b = in_.Next();
  static const char* const kAnswers[] = {
      "\"result\":{\"action\":\"accept\",\"content\":{\"approve\":true}}",
      "\"result\":{\"action\":\"accept\",\"content\":{\"approve\":false}}",
      "\"result\":{\"action\":\"decline\"}", "\"result\":{\"action\":\"cancel\"}",
      "\"error\":{\"code\":-1,\"message\":\"no\"}",
      "\"result\":{\"action\":\"accept\",\"content\":{\"approve\":\"true\"}}",
      // An error next to an approving result: taken as the error.
      "\"error\":{\"code\":1},\"result\":{\"action\":\"accept\",\"content\":{\"approve\":true}}",
      "\"result\":{\"action\":\"accept\",\"content\":{\"approve\":1}}"};
  // Any prompt the server ever sent (live, answered or withdrawn), or one it never sent.
  std::string id = "\"skill-mcp-99\"";
  if ((b & 1) == 0 && !prompt_ids_.empty()) id = prompt_ids_[(b >> 4) % prompt_ids_.size()];
  const int answer = (b >> 1) & 7;
  auto open = prompts_.find(id);
  if (open != prompts_.end()) {
    if (answer == 0) may_start_.push_back(open->second);  // the user approved that run
    prompts_.erase(open);
  }
  Send("{\"jsonrpc\":\"2.0\",\"id\":" + id + "," + kAnswers[answer] + "}");
}

void Model::Cancel() {
  const uint8_t b = in_.Next();
  const Json id = MakeId(b);
  Send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":" +
       id.dump() + "}}");
  // A cancelled request is never answered, its prompt (if any) is gone and runs nothing.
  const std::string key = id.dump();
  waiting_[key] = 0;
  for (auto it = prompts_.begin(); it != prompts_.end();) {
    it = it->second == key ? prompts_.erase(it) : std::next(it);
  }
}

void Model::CutLine() {
  const uint8_t b = in_.Next();
  static const std::string kWhole =
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"skill_run\",\"arguments\":{\"name\":\"demo\",\"script\":\"scripts/run.js\"}}}";
  // Any proper prefix of a JSON object is not JSON: answered with a null id.
  Send(kWhole.substr(0, b % kWhole.size()), /*may_fail_parse=*/true);
}

void Model::Other() {
  const uint8_t b = in_.Next();
  switch ((b >> 4) & 3) {
    case 0:
      Request(MakeId(b), "ping", "{}");
      break;
    case 1:
      Request(MakeId(b), "no/such/method", "{}");
      break;
    case 2:
      Send(
          "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
          "{\"progressToken\":" +
          MakeId(b).dump() + ",\"progress\":1}}");
      break;
    case 3:
      Send("{\"jsonrpc\":\"2.0\",\"id\":" + MakeId(b).dump() + ",\"result\":{}}");
      break;
  }
}

void Model::Run() {
  if (!server_.ok()) return;
  for (int steps = 0; !in_.empty() && steps < 64; ++steps) {
    switch (in_.Next() % 8) {
      case 0:
        Initialize();
        break;
      case 1:
        CallRun();
        break;
      case 2:
        CallRead();
        break;
      case 3:
        AnswerPrompt();
        break;
      case 4:
        Cancel();
        break;
      case 5:
        CutLine();
        break;
      case 6:
        Other();
        break;
      case 7:
        Wait();
        break;
    }
    CheckStarts();
  }
  Finish();
}

// The end of the session: every prompt still open is declined, after which each request
// has had its one answer; then a fresh ping is still answered (the server is alive).
void Model::Finish() {
  while (!prompts_.empty()) {
    const std::string id = prompts_.begin()->first;
    prompts_.erase(prompts_.begin());
    Send("{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"action\":\"decline\"}}");
  }
  CheckStarts();
  // Why: exactly one answer per request; a request left unanswered is a client hung.
  for (const auto& [id, owed] : waiting_) {
    if (owed != 0) __builtin_trap();
  }
  Request(Json("final-ping"), "ping", "{}");
  if (waiting_["\"final-ping\""] != 0) __builtin_trap();
  server_.Close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  Model(Bytes(data, size)).Run();
  return 0;
}
