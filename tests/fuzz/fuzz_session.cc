// Structure-aware libFuzzer target for whole sessions: a header byte chooses the gate
// (MCP_CONFIRM_MODE ask-user / auto / refuse / unreadable, elicitation on or off, a 600 s or
// 30 s token ttl), the protocolVersion every initialize asks for (2024-11-05, 2025-03-26,
// 2025-06-18, 2025-11-25, or one the server does not know) and whether skill_run starts
// behind serve.cc's DeferredRunTool (the session holds its input from the first skill_run
// until a step opens the run side); the rest is decoded into a sequence of steps: client
// messages (initialize, tool calls with or without a token the server issued, elicitation
// answers, cancellations, notifications, cut-off lines, answers to unknown ids) sent one by
// one to a real server (fuzz::Server: Session + McpServer + skill_run as serve.cc wires
// them, the run side a recorder), the clock moved forward, the recorder switched between
// holding and refusing, a held run settled, the run side opened. After every step it checks:
//   - every answer names a request still waiting for one, and none is answered twice;
//   - a notification or an answer of the client's is never answered;
//   - the run side is asked to start a run (counted on the recorder, whether or not an
//     answer shows it) only for a request carrying an unspent, unexpired token the server
//     issued for the same arguments, or one whose live prompt the client accepted with
//     approve: true, never for a cancelled request (the clock moves forward on demand);
//     every start is answered as dispatched, and every dispatched answer had its start;
//   - the run side holds a started run when told to (a step switches the recorder between
//     holding and refusing in four ways): then the call is answered only when a later step
//     settles the run with made-up results (exit code or signal, memory kill, timeout, setup
//     failure, stdout/stderr bytes that may be invalid UTF-8 or cut), and that answer is
//     the receipt or RUN_SETUP_FAILED, its exit code, signal, flags and plain-ASCII output
//     as given; RUN_IN_PROGRESS comes only while a run is held; cancelling the call whose
//     run is held (and only that) reaches the run side's Cancel;
//   - the server asks elicitation/create only while serving a skill_run, and only when the
//     client offered form elicitation on a revision that has it and the gate's elicitation
//     is on; a token runs only when the gate checks tokens (not refuse, no prompt);
//   - a skill_run that arrives before the run side opens gets no answer until it opens,
//     and the session reads nothing after it until then: the next line, when it is a
//     cancel, a ping or an unknown method, is written (with the call or after it) and must
//     stay unread until the run side opens, then be read after the call; the model writes
//     the other lines sent meanwhile once it is open, in order;
//   - with prompts set to time out at once (a step switches it), a prompt's call is
//     answered in the same step, with nothing run;
//   - at the end, once every live prompt is declined, no request is still owed an answer
//     (exactly one answer per request, not just at most one), and the server still
//     answers a ping (alive).
#include <cstddef>
#include <cstdint>
#include <functional>
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
const std::vector<std::string> kArgVectors[] = {{"a"}, {}, {"b", "c"}, {std::string("x\0", 2)}};

// The tool payload of a tools/call result (the JSON in content[0].text), or discarded.
Json PayloadOf(const Json& result) {
  if (!result.is_object() || !result.contains("content")) return Json::value_t::discarded;
  const Json& content = result["content"];
  if (!content.is_array() || content.empty() || !content[0].contains("text") ||
      !content[0]["text"].is_string()) {
    return Json::value_t::discarded;
  }
  return Json::parse(content[0]["text"].get<std::string>(), nullptr, false);
}

std::string ErrorOf(const Json& payload) {
  if (!payload.is_object()) return "";
  auto it = payload.find("error");
  return it != payload.end() && it->is_string() ? it->get<std::string>() : "";
}

// Printable ASCII and newlines: text every renderer must pass through unchanged.
bool IsPlain(const std::string& s) {
  for (unsigned char c : s) {
    if (c != '\n' && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

struct Token {
  std::string text;
  int args = 0;
  int64_t issued_at = 0;  // skill_run's clock when it was issued
  bool used = false;
};

// The header byte: bits 0-1 the mode (3: a gate that cannot be read), bit 2 elicitation
// off, bit 3 a 30 s ttl, bits 4-6 the protocolVersion, bit 7 the run side starts closed.
GateConfig GateFor(uint8_t h) {
  GateConfig gate;
  const ConfirmMode modes[] = {ConfirmMode::kAskUser, ConfirmMode::kAuto, ConfirmMode::kRefuse,
                               ConfirmMode::kAskUser};
  gate.mode = modes[h & 3];
  if ((h & 3) == 3) gate.refusal = "MCP_CONFIRM_TTL_SECONDS is not a number of seconds";
  gate.elicitation = (h & 4) == 0;
  if (h & 8) gate.ttl_seconds = 30;
  return gate;
}

const char* const kVersions[] = {"2025-06-18", "2024-11-05", "2025-03-26", "2025-11-25",
                                 "1999-01-01", "2026-07-28", "",           "2025-06-18"};

class Model {
 public:
  explicit Model(Bytes bytes)
      : in_(bytes),
        header_(in_.Next()),
        gate_(GateFor(header_)),
        server_(gate_, 1'800'000'000, (header_ & 128) != 0),
        open_((header_ & 128) == 0) {}
  void Run();

 private:
  Json MakeId(uint8_t b) const { return (b & 8) ? Json("r" + std::to_string(b & 7)) : Json(b & 7); }
  void Send(const std::string& line, bool may_fail_parse = false);
  bool Request(const Json& id, const std::string& method, const std::string& params);
  void Do(std::function<void()> step);
  bool TokenRuns(size_t token, int args) const;
  bool Prompts() const { return client_elicits_ && gate_.elicitation && !gate_.refusal; }
  void Observe(const std::vector<Json>& out, bool may_fail_parse);
  void OnAnswer(const Json& line);
  void RecordTokens(const Json& result, const std::string& id_key);
  void CheckStarts();
  void CheckTimeouts();
  void CheckReceipt(const Json& payload) const;
  void Finish();
  std::string TakeBytes();

  void Initialize(uint8_t b);
  void CallRun(uint8_t b, uint8_t t);
  void CallRead(uint8_t b);
  void AnswerPrompt(uint8_t b);
  void Cancel(uint8_t b);
  void CutLine(uint8_t b);
  void Other(uint8_t b);
  void OpenRunSide();
  bool HeldLine(uint8_t op, uint8_t b);
  void WriteCall(const std::string& next);
  void AfterCancel(const std::string& key, size_t cancels_before);
  void Wait() { server_.Advance(8 * in_.Next()); }  // up to 34 minutes later
  void FinishRun();
  void SettleRun(RunResult result);
  void SetRecorder();

  Bytes in_;
  const uint8_t header_;
  const GateConfig gate_;
  fuzz::Server server_;
  bool open_;                                   // the run side is open
  bool client_elicits_ = false;                 // as the first initialize declared
  bool initialized_ = false;                    // an initialize has been answered
  std::optional<std::string> deferred_;         // the skill_run waiting for the run side
  std::vector<std::function<void()>> held_;     // steps sent while the session holds input
  std::string call_line_;                       // the waiting call, not yet written
  bool held_line_ = false;                      // a line the session holds was written
  std::optional<std::string> held_cancel_;      // ... and it cancels this id
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
  size_t starts_seen_ = 0;              // recorder starts already matched to a request
  std::optional<std::string> running_;  // the request whose run the recorder holds
  bool short_prompts_ = false;          // prompts time out on the next loop round
  std::set<std::string> timing_out_;    // calls whose prompt opened so, this step
  bool run_owed_ = false;               // ... and its call was not cancelled
  std::optional<RunResult> settling_;   // the result its run is being settled with
};

void Model::Send(const std::string& line, bool may_fail_parse) {
  if (!server_.Feed(line + "\n")) __builtin_trap();
  Observe(server_.TakeOutput(), may_fail_parse);
}

// Returns false when the session drops the request (its id is in flight).
bool Model::Request(const Json& id, const std::string& method, const std::string& params) {
  int& owed = waiting_[id.dump()];
  // A request reusing the id of one still in flight is dropped unanswered (session.cc),
  // whatever its method.
  const bool fresh = owed == 0;
  if (fresh) owed += 1;
  Send("{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() + ",\"method\":\"" + method +
       "\",\"params\":" + params + "}");
  return fresh;
}

// A step that writes a line runs now, or once the run side opens while the session holds
// its input (it would read the line only then, right after the waiting call).
void Model::Do(std::function<void()> step) {
  WriteCall("");
  if (deferred_) return held_.push_back(std::move(step));
  step();
  CheckStarts();
  CheckTimeouts();
}

// Why: a token is checked only when the gate neither refuses nor prompts, and then runs
// only if it is unspent, unexpired and issued for these very arguments.
bool Model::TokenRuns(size_t token, int args) const {
  if (gate_.refusal || gate_.mode == ConfirmMode::kRefuse || Prompts()) return false;
  const Token& t = tokens_[token];
  return !t.used && t.args == args && server_.now() < t.issued_at + gate_.ttl_seconds;
}

void Model::Observe(const std::vector<Json>& out, bool may_fail_parse) {
  for (const Json& line : out) {
    if (line.contains("method")) {
      if (!line.contains("id")) continue;  // a notification of the server's
      // Why: the server only ever asks the user while serving a skill_run, of a client that
      // can answer, with the gate's elicitation on.
      if (line["method"] != "elicitation/create" || !serving_run_ || !Prompts()) __builtin_trap();
      prompts_[line["id"].dump()] = *serving_run_;
      if (short_prompts_) timing_out_.insert(*serving_run_);
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
  // Errors answer other methods (an unknown one under a skill_run's id); a call answered
  // with a result has no prompt any more (it timed out).
  if (!line.contains("result")) return;
  for (auto p = prompts_.begin(); p != prompts_.end();) {
    p = p->second == key ? prompts_.erase(p) : std::next(p);
  }
  const Json& result = line["result"];
  const Json payload = PayloadOf(result);
  const std::string error = ErrorOf(payload);
  // The run side refused a start (any of the recorder's refusals).
  if (error == "RUN_NOT_STARTED") dispatched_.insert(key);
  // Why: "one at a time" is said only while a run is in flight.
  if (error == "RUN_IN_PROGRESS" && !running_) __builtin_trap();
  const bool receipt = payload.is_object() && payload.contains("exitCode");
  if (receipt || error == "RUN_SETUP_FAILED") {
    // Why: a run's answer comes only when its run settles, and only to its own call.
    if (!settling_ || key != *running_) __builtin_trap();
    CheckReceipt(payload);
  }
  RecordTokens(result, key);
}

// The answer to a settled run says what the run side reported (docs/wire.md "skill_run,
// confirmed"); plain text comes through byte for byte, anything else at least as JSON.
void Model::CheckReceipt(const Json& payload) const {
  const RunResult& r = *settling_;
  if (r.failure) {
    if (ErrorOf(payload) != "RUN_SETUP_FAILED") __builtin_trap();
    return;
  }
  const Json code = r.exit_code ? Json(*r.exit_code) : Json(nullptr);
  if (payload["exitCode"] != code || payload["signal"].is_null() == r.signal.has_value() ||
      payload["timedOut"] != r.timed_out || payload["truncated"]["stdout"] != r.out.truncated ||
      payload["truncated"]["stderr"] != r.err.truncated || !payload["stdout"].is_string() ||
      !payload["stderr"].is_string()) {
    __builtin_trap();
  }
  if (IsPlain(r.out.data) && payload["stdout"] != r.out.data) __builtin_trap();
  const std::string err = payload["stderr"].get<std::string>();
  if (IsPlain(r.err.data) && err.compare(0, r.err.data.size(), r.err.data) != 0) __builtin_trap();
  // Why: a memory kill is told at the end of stderr; otherwise stderr is the script's own.
  if (r.memory_kill ? err.size() <= r.err.data.size() || err.back() != '\n'
                    : IsPlain(r.err.data) && err.size() != r.err.data.size()) {
    __builtin_trap();
  }
}

// After every step: each run the recorder was asked to start belongs to a request this
// step allowed to start one, with the same arguments, and was answered as dispatched; each
// dispatched answer had its start.
// After every step, once its cancels are counted.
void Model::CheckTimeouts() {
  // Why: a prompt that times out ends its call (nothing ran), it does not leave it hanging.
  for (const std::string& key : timing_out_) {
    if (waiting_[key] != 0) __builtin_trap();
  }
  timing_out_.clear();
}

void Model::CheckStarts() {
  const auto& starts = server_.recorder().starts();
  std::set<std::string> started;
  for (; starts_seen_ < starts.size(); ++starts_seen_) {
    auto it = may_start_.begin();
    while (it != may_start_.end() && kArgVectors[run_args_[*it]] != starts[starts_seen_].args) ++it;
    // Why: nothing runs without a valid token or an accepted live prompt.
    if (it == may_start_.end()) __builtin_trap();
    if (run_token_[*it]) tokens_[*run_token_[*it]].used = true;
    if (starts[starts_seen_].held) {
      // Why: a run in flight is answered when it settles, not before.
      if (running_ || dispatched_.count(*it) != 0 || waiting_[*it] != 1) __builtin_trap();
      running_ = *it;
      run_owed_ = true;
    } else {
      started.insert(*it);
    }
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

void Model::Initialize(uint8_t b) {
  static const char* const kShapes[] = {"{}", "{\"form\":{}}", "{\"url\":{}}",
                                        "{\"form\":{},\"url\":{}}"};
  const int shape = (b >> 5) & 3;
  const std::string caps =
      (b & 16) ? std::string("{\"elicitation\":") + kShapes[shape] + "}" : "{}";
  const std::string asked = kVersions[(header_ >> 4) & 7];
  std::string served = "2025-11-25";  // the newest, for a version the server does not know
  for (const char* v : {"2024-11-05", "2025-03-26", "2025-06-18"}) {
    if (asked == v) served = v;
  }
  const bool fresh =
      Request(MakeId(b), "initialize",
              "{\"protocolVersion\":" + Json(asked).dump() + ",\"capabilities\":" + caps + "}");
  // Why: elicitation/create exists from 2025-06-18, and a client that offers only url mode
  // cannot answer a form. Only the first initialize fixes it: a second is -32600 and
  // changes nothing (docs/wire.md §10).
  if (fresh && !initialized_)
    client_elicits_ = (b & 16) && shape != 2 && served >= "2025-06-18";
  if (fresh) initialized_ = true;
}

void Model::CallRun(uint8_t b, uint8_t t) {
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
  const bool fresh = waiting_[key] == 0;
  if (fresh) {
    run_args_[key] = args;
    run_token_[key] = used;
    if (open_ && used && TokenRuns(*used, args)) may_start_.push_back(key);
  }
  const std::string params =
      "{\"name\":\"skill_run\",\"arguments\":{\"name\":\"demo\",\"script\":"
      "\"scripts/run.js\",\"args\":" +
      std::string(kArgs[args]) + token + "}}";
  if (!open_ && fresh) {
    // The call that will wait for the run side: written with the next step's line when
    // that one asks (one read, so the rest waits in the session's buffer), else alone.
    waiting_[key] = 1;
    deferred_ = key;
    call_line_ = "{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() +
                 ",\"method\":\"tools/call\",\"params\":" + params + "}\n";
    return;
  }
  serving_run_ = key;
  Request(id, "tools/call", params);
  serving_run_.reset();
}

// Writes the waiting call (with `next`, in one write, when given).
void Model::WriteCall(const std::string& next) {
  if (call_line_.empty()) return;
  if (!server_.Feed(call_line_ + next)) __builtin_trap();
  call_line_.clear();
  // Why: a call before the run side is decided waits, and the session reads nothing
  // after it (DeferredRunTool, Session::HoldInput).
  if (!server_.TakeOutput().empty()) __builtin_trap();
}

// The run side is decided (serve.cc's open_runs): the waiting call goes to skill_run, then
// the session reads what it held, here each held step in order.
void Model::OpenRunSide() {
  if (open_) return;
  open_ = true;
  std::optional<std::string> call = std::move(deferred_);
  deferred_.reset();
  if (call) {
    const std::optional<size_t>& used = run_token_[*call];
    if (used && TokenRuns(*used, run_args_[*call])) may_start_.push_back(*call);
  }
  WriteCall("");
  serving_run_ = call;
  const size_t cancels = server_.recorder().cancels();
  if (!server_.OpenRunSide()) __builtin_trap();
  Observe(server_.TakeOutput(), false);
  serving_run_.reset();
  CheckStarts();
  // The held cancel was read right after the call it may name.
  if (held_cancel_) AfterCancel(*held_cancel_, cancels);
  held_cancel_.reset();
  held_line_ = false;
  CheckTimeouts();
  std::vector<std::function<void()>> held = std::move(held_);
  held_.clear();
  for (auto& step : held) {
    step();
    CheckStarts();
    CheckTimeouts();
  }
}

void Model::CallRead(uint8_t b) {
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

void Model::AnswerPrompt(uint8_t b) {
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

std::string CancelLine(const Json& id) {
  return "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":" +
         id.dump() + "}}";
}

void Model::Cancel(uint8_t b) {
  const Json id = MakeId(b);
  const size_t cancels = server_.recorder().cancels();
  Send(CancelLine(id));
  AfterCancel(id.dump(), cancels);
}

// The first line after a call that waits for the run side, when it is a cancel, a ping or
// an unknown method (of another id), goes through the session's held input itself: the
// session must read nothing of it while the call waits, then read it right after the call.
bool Model::HeldLine(uint8_t op, uint8_t b) {
  if (!deferred_ || !held_.empty() || held_line_) return false;
  const Json id = MakeId(b);
  std::string line = CancelLine(id);
  if (op == 6) {
    if (((b >> 4) & 3) > 1 || id.dump() == *deferred_) return false;
    const char* method = ((b >> 4) & 3) == 0 ? "ping" : "no/such/method";
    waiting_[id.dump()] += 1;  // no other request under this id is in flight
    line = "{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() + ",\"method\":\"" + method +
           "\",\"params\":{}}";
  } else {
    held_cancel_ = id.dump();
  }
  held_line_ = true;
  // With the call in one write while it is still unwritten; once an earlier step wrote it
  // alone, this line follows alone (WriteCall would drop it: it writes only with a call).
  if ((b & 128) && !call_line_.empty()) return WriteCall(line + "\n"), true;
  WriteCall("");
  if (!server_.Feed(line + "\n")) __builtin_trap();
  // Why: while a call waits for the run side, the session reads nothing after it.
  if (!server_.TakeOutput().empty()) __builtin_trap();
  return true;
}

void Model::AfterCancel(const std::string& key, size_t cancels) {
  // Why: cancelling the call whose run is in flight stops that run (it then settles with
  // no answer); no other cancel reaches the run side.
  if (server_.recorder().cancels() != cancels + (running_ == key ? 1 : 0)) __builtin_trap();
  if (running_ == key) run_owed_ = false;
  // A cancelled request is never answered, its prompt (if any) is gone and runs nothing.
  waiting_[key] = 0;
  for (auto it = prompts_.begin(); it != prompts_.end();) {
    it = it->second == key ? prompts_.erase(it) : std::next(it);
  }
}

void Model::CutLine(uint8_t b) {
  static const std::string kWhole =
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"skill_run\",\"arguments\":{\"name\":\"demo\",\"script\":\"scripts/run.js\"}}}";
  // Any proper prefix of a JSON object is not JSON: answered with a null id.
  Send(kWhole.substr(0, b % kWhole.size()), /*may_fail_parse=*/true);
}

void Model::Other(uint8_t b) {
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

std::string Model::TakeBytes() {
  std::string out(in_.Next() % 64, '\0');
  for (char& c : out) c = static_cast<char>(in_.Next());
  return out;
}

// Settles the run the recorder holds with what the input says the run side reported.
void Model::FinishRun() {
  if (!running_) return;  // nothing in flight: a no-op that reads nothing
  RunResult r;
  const uint8_t kind = in_.Next();
  switch (kind & 3) {
    case 0:
      r.exit_code = in_.Next();
      break;
    case 1:
      r.signal = in_.Next();  // any number, named or not
      break;
    case 2:
      r.failure = SetupFailure{static_cast<int8_t>(in_.Next()), in_.Next(), 1000,           1000,
                               "/usr/libexec/skill-mcp/worker", "node",     "/usr/bin/node"};
      break;
    case 3:
      r.signal = 9;
      r.memory_kill = MemoryKill{uint64_t{in_.Next()} << 20, uint64_t{in_.Next()} << 21, in_.Next(),
                                 (kind & 32) ? size_t{4096} : 0};
      break;
  }
  r.out.truncated = (kind & 4) != 0;
  r.err.truncated = (kind & 8) != 0;
  r.timed_out = (kind & 16) != 0;
  r.out.data = TakeBytes();
  r.err.data = TakeBytes();
  r.duration_ms = int64_t{in_.Next()} * 41;
  SettleRun(std::move(r));
}

void Model::SettleRun(RunResult result) {
  const std::string key = *running_;
  const int owed = waiting_[key];  // a new call may reuse the id of a cancelled one
  settling_ = result;
  if (!server_.FinishRun(std::move(result))) __builtin_trap();  // the model saw it held
  Observe(server_.TakeOutput(), false);
  settling_.reset();
  running_.reset();
  // Why: a run that settles answers its call, unless the call was cancelled.
  if (waiting_[key] != owed - (run_owed_ ? 1 : 0)) __builtin_trap();
}

// How the run side answers the next start: hold it, or one of four refusals.
void Model::SetRecorder() {
  const uint8_t b = in_.Next();
  std::optional<StartRefusal> refusal;
  switch (b % 5) {
    case 0:
      break;
    case 1:
      refusal = StartRefusal{StartProblem::kUnavailable, fuzz::kRecorderRefusal, 0};
      break;
    case 2:
      refusal = StartRefusal{StartProblem::kBusy, "", 0};
      break;
    case 3:
      refusal = StartRefusal{StartProblem::kSystem, "fork", b >> 3};
      break;
    case 4:
      refusal = StartRefusal{StartProblem::kBadDescription, "", 0};
      break;
  }
  server_.recorder().SetRefusal(std::move(refusal));
}

void Model::Run() {
  if (!server_.ok()) return;
  for (int steps = 0; !in_.empty() && steps < 64; ++steps) {
    const uint8_t op = in_.Next() % 12;
    const uint8_t b = op <= 6 ? in_.Next() : 0;
    if (op != 4 && op != 6) WriteCall("");
    switch (op) {
      case 0:
        Do([this, b] { Initialize(b); });
        break;
      case 1: {
        const uint8_t t = in_.Next();
        Do([this, b, t] { CallRun(b, t); });
        break;
      }
      case 2:
        Do([this, b] { CallRead(b); });
        break;
      case 3:
        Do([this, b] { AnswerPrompt(b); });
        break;
      case 4:
        if (!HeldLine(op, b)) Do([this, b] { Cancel(b); });
        break;
      case 5:
        Do([this, b] { CutLine(b); });
        break;
      case 6:
        if (!HeldLine(op, b)) Do([this, b] { Other(b); });
        break;
      case 7:
        Wait();
        break;
      case 8:
        FinishRun();
        break;
      case 9:
        SetRecorder();
        break;
      case 10:
        OpenRunSide();
        break;
      case 11:
        short_prompts_ = (in_.Next() & 1) != 0;
        server_.SetPromptTimeoutMs(short_prompts_ ? std::optional<int64_t>(0) : std::nullopt);
        break;
    }
    CheckStarts();
    CheckTimeouts();
  }
  Finish();
}

// The end of the session: every prompt still open is declined, after which each request
// has had its one answer; then a fresh ping is still answered (the server is alive).
void Model::Finish() {
  OpenRunSide();  // a session that ends before the run side opens still answers the call
  while (!prompts_.empty()) {
    const std::string id = prompts_.begin()->first;
    prompts_.erase(prompts_.begin());
    Send("{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"result\":{\"action\":\"decline\"}}");
  }
  CheckStarts();
  if (running_) {
    RunResult done;
    done.exit_code = 0;
    SettleRun(std::move(done));
  }
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
