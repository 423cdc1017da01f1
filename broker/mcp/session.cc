#include "broker/mcp/session.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "shared/log.h"

namespace skillmcp {

void Reply::Result(OrderedJson result) const {
  if (state_->answered) return;
  state_->answered = true;
  if (state_->session == nullptr) return;  // cancelled: the client asked for no answer
  state_->session->Send(MakeResult(state_->id, std::move(result)));
  state_->session->Finish(state_->id);
}

void Reply::Error(int code, std::string_view message, std::optional<Json> data) const {
  if (state_->answered) return;
  state_->answered = true;
  if (state_->session == nullptr) return;
  state_->session->Send(MakeError(state_->id, code, message, std::move(data)));
  state_->session->Finish(state_->id);
}

Session::Session(EventLoop& loop, int in_fd, int out_fd)
    : loop_(loop), in_fd_(in_fd), out_fd_(out_fd) {}

Session::~Session() {
  for (auto& [key, state] : in_flight_) state->session = nullptr;
  if (!closed_) loop_.RemoveFd(in_fd_);
  for (auto& [key, out] : outgoing_) loop_.CancelTimer(out.timer);
}

void Session::OnRequest(std::string method, RequestHandler handler) {
  requests_[std::move(method)] = std::move(handler);
}

void Session::OnNotification(std::string method, NotificationHandler handler) {
  notifications_[std::move(method)] = std::move(handler);
}

bool Session::Start() {
  return loop_.AddFd(in_fd_, EPOLLIN, [this](uint32_t) { OnReadable(); });
}

void Session::OnReadable() {
  char buf[65536];
  ssize_t n = read(in_fd_, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  auto on_line = [this](std::string_view line) { HandleLine(line); };
  auto on_overflow = [this] {
    Send(MakeError(nullptr, rpc::kInvalidRequest,
                   "message is larger than the " + std::to_string(kMaxMessageBytes >> 20) +
                       " MiB limit and was discarded; split the request or send smaller "
                       "arguments"));
  };
  if (n <= 0) {
    reader_.Finish(on_line);
    loop_.RemoveFd(in_fd_);
    closed_ = true;
    if (on_closed_) on_closed_();
    return;
  }
  reader_.Feed(std::string_view(buf, static_cast<size_t>(n)), on_line, on_overflow);
}

void Session::HandleLine(std::string_view line) {
  RpcMessage m = ParseRpcLine(line);
  switch (m.kind) {
    case RpcMessage::Kind::kInvalid:
      Send(MakeError(m.id, m.error_code, m.error_message));
      return;
    case RpcMessage::Kind::kResponse:
      HandleResponse(m);
      return;
    case RpcMessage::Kind::kNotification: {
      auto it = notifications_.find(m.method);
      // Why: notifications are never answered, not even with an error (JSON-RPC 2.0).
      if (it != notifications_.end()) it->second(m);
      return;
    }
    case RpcMessage::Kind::kRequest: {
      auto it = requests_.find(m.method);
      if (it == requests_.end()) {
        Send(MakeError(m.id, rpc::kMethodNotFound,
                       "method \"" + m.method + "\" is not supported by skill-mcp"));
        return;
      }
      std::string key = m.id.dump();
      // Why: cancellation and answers are matched by id; a second request under a live
      // id would let one cancel or answer stand for the other.
      if (in_flight_.count(key) != 0) {
        Send(MakeError(m.id, rpc::kInvalidRequest,
                       "a request with this id is still in progress; use a fresh id"));
        return;
      }
      auto state = std::make_shared<Reply::State>();
      state->session = this;
      state->id = m.id;
      in_flight_[key] = state;
      Reply reply;
      reply.state_ = state;
      it->second(m, reply);
      return;
    }
  }
}

void Session::Finish(const Json& id) { in_flight_.erase(id.dump()); }

bool Session::CancelInFlight(const Json& id) {
  auto it = in_flight_.find(id.dump());
  if (it == in_flight_.end()) return false;
  it->second->session = nullptr;
  in_flight_.erase(it);
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

void Session::Send(const OrderedJson& message) {
  std::string line = SerializeLine(message);
  std::string_view rest(line);
  while (!rest.empty()) {
    ssize_t w = write(out_fd_, rest.data(), rest.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        // stdout is non-blocking only if the client made it so; wait briefly for room.
        usleep(1000);
        continue;
      }
      LOG_ERROR_ERRNO("could not write to stdout; the client is gone");
      return;
    }
    rest.remove_prefix(static_cast<size_t>(w));
  }
}

}  // namespace skillmcp
