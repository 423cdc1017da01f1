#include "broker/mcp/session.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "broker/mcp/era.h"
#include "shared/log.h"

namespace skillmcp {
namespace {

std::string DumpResult(const OrderedJson& result) {
  return result.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

}  // namespace

// The answers of one batch line, in the order they came; `pending` counts the entries not
// yet answered, plus one while the line is still being dispatched.
struct BatchAnswers {
  std::vector<std::string> answers;
  size_t pending = 1;
  size_t bytes = 0;
};

void Reply::StampModern(std::string complete_fields, std::string input_required_fields) const {
  state_->modern = true;
  state_->complete_fields = std::move(complete_fields);
  state_->input_required_fields = std::move(input_required_fields);
}

void Reply::InputRequired(const OrderedJson& body) const {
  if (!state_->modern) return Error(rpc::kInternalError, "input_required outside 2026-07-28");
  ResultJson(JsonParts{"", PrependFields(state_->input_required_fields, DumpResult(body)), ""},
             /*stamped=*/true);
}

void Reply::Result(OrderedJson result) const {
  if (state_->modern) return ResultJson(DumpResult(result));
  if (state_->answered) return;
  state_->answered = true;
  if (state_->session == nullptr) return;  // cancelled: the client asked for no answer
  state_->session->Deliver(state_->batch, SerializeLine(MakeResult(state_->id, std::move(result))));
  state_->session->Finish(state_->id);
}

void Reply::ResultJson(std::string result_json) const {
  ResultJson(JsonParts{"", std::move(result_json), ""});
}

void Reply::ResultJson(JsonParts result) const { ResultJson(std::move(result), false); }

void Reply::ResultJson(JsonParts result, bool stamped) const {
  if (state_->answered) return;
  if (state_->modern && !stamped) {
    // The fields go in after the opening brace of whichever part holds it; a multi-MiB
    // body is shifted in place, not copied (docs/performance.md).
    std::string& first = result.head.empty() ? result.body : result.head;
    if (&first == &result.body && !first.empty() && first.front() == '{') {
      const bool empty_object = first.size() > 1 && first[1] == '}';
      result.head = "{" + state_->complete_fields + (empty_object ? "" : ",");
      result.body.erase(0, 1);
    } else {
      first = PrependFields(state_->complete_fields, first);
    }
  }
  state_->answered = true;
  if (state_->session == nullptr) return;
  if (state_->batch) {
    state_->session->Deliver(state_->batch, ResultLineHead(state_->id) + result.head + result.body +
                                                result.tail + std::string(kResultLineTail));
  } else {
    state_->session->SendResultJson(state_->id, std::move(result));
  }
  state_->session->Finish(state_->id);
}

void Reply::Error(int code, std::string_view message, std::optional<Json> data) const {
  if (state_->answered) return;
  // Why: 2026-07-28 answers a missing resource -32602 with data.uri; the 2025 revisions
  // keep -32002, byte for byte (docs/wire.md §8).
  if (state_->modern && code == rpc::kResourceNotFound) code = rpc::kInvalidParams;
  state_->answered = true;
  if (state_->session == nullptr) return;
  state_->session->Deliver(state_->batch,
                           SerializeLine(MakeError(state_->id, code, message, std::move(data))));
  state_->session->Finish(state_->id);
}

Session::Session(EventLoop& loop, int in_fd, int out_fd)
    : loop_(loop), in_fd_(in_fd), out_(loop, out_fd) {}

Session::~Session() {
  for (auto& [key, state] : in_flight_) state->session = nullptr;
  if (input_watched_) loop_.RemoveFd(in_.fd());
  if (pump_timer_ != 0) loop_.CancelTimer(pump_timer_);
  for (auto& [key, out] : outgoing_) loop_.CancelTimer(out.timer);
}

void Session::OnRequest(std::string method, RequestHandler handler) {
  requests_[std::move(method)] = std::move(handler);
}

void Session::OnNotification(std::string method, NotificationHandler handler) {
  notifications_[std::move(method)] = std::move(handler);
}

bool Session::Start() {
  OutputQueue::Events events;
  events.below_pause = [this] { ResumeInput(); };
  // Why: a client that reads nothing for the grace, or closed stdout, is gone; it is
  // dropped as on stdin EOF (its run killed), so memory and the loop stay its own.
  events.stalled = [this] { Close(); };
  events.broken = [this] { Close(); };
  if (!out_.Start(std::move(events))) return false;
  in_.Open(in_fd_, /*for_write=*/false);
  if (in_.kind() != StdioFd::Kind::kPlain) {
    if (loop_.AddFd(in_.fd(), EPOLLIN, [this](uint32_t) { OnReadable(); })) {
      input_watched_ = true;
      return true;
    }
    if (errno != EPERM) return false;
    in_.MarkNotPollable();
  }
  SchedulePump();
  return true;
}

// Input epoll refuses never makes a reader wait for a peer: one chunk per loop round,
// so timers and output still run between chunks.
void Session::SchedulePump() {
  if (pump_timer_ != 0 || closed_ || input_paused_) return;
  pump_timer_ = loop_.AddTimer(0, [this] {
    pump_timer_ = 0;
    OnReadable();
    SchedulePump();
  });
}

void Session::OnReadable() {
  if (closed_ || input_paused_) return;
  char buf[65536];
  ssize_t n = in_.Read(buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n < 0) LOG_WARN_ERRNO("could not read stdin; closing the session");
  if (n <= 0) {
    reader_.Finish([this](std::string_view line) { HandleLine(line); });
    // A last line that holds the input (HoldInput) is answered first: the end of input
    // is read again, and the session closed, once it is released.
    if (input_held_) return;
    Close();
    return;
  }
  Consume(std::string_view(buf, static_cast<size_t>(n)));
}

// Frames one line at a time, so a pause (too much output queued) takes effect between
// two requests; what is left waits in pending_input_.
void Session::Consume(std::string_view data) {
  auto on_line = [this](std::string_view line) { HandleLine(line); };
  auto on_overflow = [this] {
    SendError(nullptr, rpc::kInvalidRequest,
              "message is larger than the " + std::to_string(kMaxMessageBytes >> 20) +
                  " MiB limit and was discarded; split the request or send smaller "
                  "arguments");
  };
  while (!data.empty() && !closed_) {
    if (input_paused_) {
      pending_input_.append(data);
      return;
    }
    size_t nl = data.find('\n');
    size_t take = nl == std::string_view::npos ? data.size() : nl + 1;
    reader_.Feed(data.substr(0, take), on_line, on_overflow);
    data.remove_prefix(take);
  }
}

// Why: past kOutputPauseBytes queued, reading stops, so a client that does not read
// cannot make the broker hold more than that plus one answer (docs/wire.md §10).
void Session::PauseInput() {
  if (input_paused_ || closed_) return;
  input_paused_ = true;
  if (input_watched_) loop_.RemoveFd(in_.fd());
  input_watched_ = false;
  if (pump_timer_ != 0) loop_.CancelTimer(pump_timer_);
  pump_timer_ = 0;
}

void Session::HoldInput() {
  input_held_ = true;
  PauseInput();
}

void Session::ReleaseInput() {
  input_held_ = false;
  if (!out_.over_pause()) ResumeInput();
}

void Session::ResumeInput() {
  if (!input_paused_ || closed_ || input_held_) return;
  input_paused_ = false;
  std::string held = std::move(pending_input_);
  pending_input_.clear();
  Consume(held);
  if (input_paused_ || closed_) return;
  if (in_.kind() == StdioFd::Kind::kPlain) return SchedulePump();
  if (loop_.AddFd(in_.fd(), EPOLLIN, [this](uint32_t) { OnReadable(); })) {
    input_watched_ = true;
    return;
  }
  LOG_ERROR_ERRNO("cannot watch stdin again; closing the session");
  Close();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  if (input_watched_) loop_.RemoveFd(in_.fd());
  input_watched_ = false;
  if (pump_timer_ != 0) loop_.CancelTimer(pump_timer_);
  pump_timer_ = 0;
  pending_input_.clear();
  if (on_closed_) on_closed_();
}

void Session::SendError(const Json& id, int code, std::string_view message,
                        const std::shared_ptr<BatchAnswers>& batch) {
  OrderedJson m = MakeError(id, code, message);
  if (id.is_null() && omit_null_error_id_) m.erase("id");
  Deliver(batch, SerializeLine(m));
}

bool Session::DropsReusedId(const Json& id) {
  // Why: cancellation and answers are matched by id, and JSON-RPC wants ids unique
  // among requests in flight; any answer to the duplicate would be a second answer
  // under the live id. It is dropped, said on stderr; the first keeps its one answer.
  if (in_flight_.count(id.dump()) == 0) return false;
  LOG_WARN(
      "dropped a request that reuses the id %s of one still in progress; the client must "
      "use a fresh id",
      id.dump(-1, ' ', /*ensure_ascii=*/true).substr(0, 80).c_str());
  return true;
}

void Session::HandleLine(std::string_view line) {
  if (batches_accepted_ && LooksLikeBatch(line)) return HandleBatch(line);
  HandleMessage(ParseRpcLine(line), nullptr);
}

// Each entry is served as if it had come on a line of its own, its answer kept for the
// batch (JSON-RPC 2.0, "Batch"): no answer for a notification or a response, so a batch
// of only those is answered with nothing.
void Session::HandleBatch(std::string_view line) {
  RpcBatch parsed = ParseRpcBatch(line, kMaxBatchEntries);
  if (parsed.refusal) return HandleMessage(std::move(*parsed.refusal), nullptr);
  auto batch = std::make_shared<BatchAnswers>();
  batch->pending += parsed.messages.size();
  for (RpcMessage& m : parsed.messages) {
    // Why: a batch's answers are held until its last one, outside the output queue's
    // pause; past the budget a request is refused unserved, so one line cannot make the
    // broker hold more than the budget plus the answers already under way.
    if (m.kind == RpcMessage::Kind::kRequest && batch->bytes >= kBatchAnswerBudget) {
      if (DropsReusedId(m.id)) {
        EntryDone(batch);
        continue;
      }
      Deliver(batch, SerializeLine(MakeError(m.id, rpc::kInvalidRequest,
                                             "this batch's answers are over " +
                                                 std::to_string(kBatchAnswerBudget >> 20) +
                                                 " MiB; send this request again on its own")));
      continue;
    }
    HandleMessage(std::move(m), batch);
  }
  EntryDone(batch);
}

void Session::HandleMessage(RpcMessage m, const std::shared_ptr<BatchAnswers>& batch) {
  switch (m.kind) {
    case RpcMessage::Kind::kInvalid:
      if (!m.id.is_null() && DropsReusedId(m.id)) break;
      return SendError(m.id, m.error_code, m.error_message, batch);
    case RpcMessage::Kind::kResponse:
      HandleResponse(m);
      break;
    case RpcMessage::Kind::kNotification: {
      auto it = notifications_.find(m.method);
      // Why: notifications are never answered, not even with an error (JSON-RPC 2.0).
      if (it != notifications_.end()) it->second(m);
      break;
    }
    case RpcMessage::Kind::kRequest: {
      // Checked before the method: even an error would be a second answer under a live id.
      if (DropsReusedId(m.id)) break;
      auto it = requests_.find(m.method);
      if (it == requests_.end()) {
        return Deliver(batch, SerializeLine(MakeError(
                                  m.id, rpc::kMethodNotFound,
                                  "method \"" + m.method + "\" is not supported by skill-mcp")));
      }
      std::string key = m.id.dump();
      auto state = std::make_shared<Reply::State>();
      state->session = this;
      state->id = m.id;
      state->batch = batch;
      in_flight_[key] = state;
      Reply reply;
      reply.state_ = state;
      it->second(m, reply);
      return;
    }
  }
  if (batch) EntryDone(batch);
}

void Session::Finish(const Json& id) { in_flight_.erase(id.dump()); }

bool Session::CancelInFlight(const Json& id) {
  auto it = in_flight_.find(id.dump());
  if (it == in_flight_.end()) return false;
  std::shared_ptr<Reply::State> state = std::move(it->second);
  state->session = nullptr;
  in_flight_.erase(it);
  // A cancelled request gets no answer, in a batch as on its own line.
  if (state->batch) EntryDone(state->batch);
  return true;
}

void Session::HandleResponse(const RpcMessage& m) {
  auto it = outgoing_.find(m.id.dump());
  if (it == outgoing_.end()) {
    // Why: an answer to an unknown or stale id must never be taken as approval.
    LOG_WARN("ignored a response to unknown or expired request id %s", m.id.dump().c_str());
    return;
  }
  Outgoing out = std::move(it->second);
  outgoing_.erase(it);
  loop_.CancelTimer(out.timer);
  // Why: an answer carrying both error and result is taken as the error, so an
  // ambiguous answer to a confirmation prompt never reads as approval.
  if (!m.error.is_null()) {
    out.handler(nullptr, &m.error);
  } else {
    out.handler(&m.result, nullptr);
  }
}

Json Session::SendRequest(const std::string& method, OrderedJson params, int64_t timeout_ms,
                          ResponseHandler handler) {
  Json id = "skill-mcp-" + std::to_string(next_id_++);
  std::string key = id.dump();
  EventLoop::TimerId timer = loop_.AddTimer(timeout_ms, [this, key] {
    auto it = outgoing_.find(key);
    if (it == outgoing_.end()) return;
    ResponseHandler h = std::move(it->second.handler);
    outgoing_.erase(it);
    Json err = {{"code", -1}, {"message", "no answer within the time limit"}};
    h(nullptr, &err);
  });
  outgoing_[key] = Outgoing{std::move(handler), timer};
  OrderedJson msg;
  msg["jsonrpc"] = "2.0";
  msg["id"] = id;
  msg["method"] = method;
  msg["params"] = std::move(params);
  Send(msg);
  return id;
}

void Session::WithdrawRequest(const Json& id, std::string_view reason) {
  auto it = outgoing_.find(id.dump());
  if (it == outgoing_.end()) return;
  loop_.CancelTimer(it->second.timer);
  outgoing_.erase(it);
  OrderedJson msg;
  msg["jsonrpc"] = "2.0";
  msg["method"] = "notifications/cancelled";
  msg["params"] = OrderedJson{{"requestId", id}, {"reason", std::string(reason)}};
  Send(msg);
}

void Session::Send(const OrderedJson& message) { Deliver(nullptr, SerializeLine(message)); }

void Session::Deliver(const std::shared_ptr<BatchAnswers>& batch, std::string line) {
  if (batch) {
    line.pop_back();  // the newline: the batch's own line ends the array
    batch->bytes += line.size();
    batch->answers.push_back(std::move(line));
    return EntryDone(batch);
  }
  if (closed_) return;  // the client is gone: nothing more reaches it
  out_.Push(std::move(line));
  if (out_.over_pause()) PauseInput();
}

void Session::EntryDone(const std::shared_ptr<BatchAnswers>& batch) {
  if (--batch->pending > 0 || batch->answers.empty()) return;
  std::string line = "[";
  for (size_t i = 0; i < batch->answers.size(); ++i) {
    if (i > 0) line.push_back(',');
    line += batch->answers[i];
  }
  batch->answers.clear();
  line += "]\n";
  Deliver(nullptr, std::move(line));
}

void Session::SendResultJson(const Json& id, JsonParts result) {
  if (closed_) return;
  out_.Push(ResultLineHead(id) + result.head, std::move(result.body),
            result.tail + std::string(kResultLineTail));
  if (out_.over_pause()) PauseInput();
}

}  // namespace skillmcp
