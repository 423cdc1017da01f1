// One JSON-RPC peer over a pair of descriptors (stdin/stdout), driven by the event loop:
// reads and frames requests, dispatches them to handlers that may answer later, sends
// the server's own requests (elicitation/create) and matches their answers by id.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "broker/loop/event_loop.h"
#include "broker/mcp/jsonrpc.h"
#include "broker/mcp/line_reader.h"
#include "broker/mcp/output_queue.h"
#include "broker/loop/stdio_fd.h"
#include "broker/tools/tool.h"

namespace skillmcp {

// How many messages one batch line may hold, and how many bytes of answers a batch may
// gather before its further requests are refused unserved (docs/wire.md §10): a batch's
// answers are written together, so they are held until the last is ready.
inline constexpr size_t kMaxBatchEntries = 64;
inline constexpr size_t kBatchAnswerBudget = 4 * 1024 * 1024;

struct BatchAnswers;

// Answers one request exactly once. Copies share one state; a second answer is ignored,
// and so is any answer after the client cancelled the request.
class Reply {
 public:
  void Result(OrderedJson result) const;
  // The same, with the result already serialised as minified JSON text.
  void ResultJson(std::string result_json) const;
  void ResultJson(JsonParts result) const;
  void Error(int code, std::string_view message, std::optional<Json> data = std::nullopt) const;

  // 2026-07-28 (docs/wire.md §8): every result object then starts with `complete_fields`
  // (resultType "complete", cache hints, _meta), and a missing resource (-32002) is
  // answered -32602. Set before the handler runs.
  void StampModern(std::string complete_fields, std::string input_required_fields) const;
  // A 2026 `input_required` result: `body` ({inputRequests, requestState}) after the
  // stamp's input_required fields. Only after StampModern.
  void InputRequired(const OrderedJson& body) const;

 private:
  friend class Session;
  struct State {
    class Session* session = nullptr;
    Json id;
    bool answered = false;
    bool modern = false;
    std::string complete_fields;
    std::string input_required_fields;
    std::shared_ptr<BatchAnswers> batch;  // set when the request came in a batch
  };
  void ResultJson(JsonParts result, bool stamped) const;
  std::shared_ptr<State> state_;
};

class Session {
 public:
  using RequestHandler = std::function<void(const RpcMessage& request, Reply reply)>;
  using NotificationHandler = std::function<void(const RpcMessage& notification)>;
  // Exactly one of result / error is set; error {code: -1} when the wait timed out.
  using ResponseHandler = std::function<void(const Json* result, const Json* error)>;

  Session(EventLoop& loop, int in_fd, int out_fd);
  ~Session();

  void OnRequest(std::string method, RequestHandler handler);
  void OnNotification(std::string method, NotificationHandler handler);
  // Called once when the client is gone: input ended or failed, stdout was closed, or
  // the client read nothing for kStalledClientGraceMs while output waited.
  void OnClosed(std::function<void()> handler) { on_closed_ = std::move(handler); }

  // Begins reading `in_fd` and prepares `out_fd` (stdio_fd.h); false with errno set when
  // either cannot be watched. Input epoll refuses (a file, /dev/null) is read in chunks
  // between loop rounds until its end.
  bool Start();

  // JSON-RPC 2.0 answers a message whose id is unknown with "id": null; the 2025-11-25
  // schema allows only a string or integer there and makes the id optional, so from that
  // revision on such an error carries no "id" (docs/wire.md §10).
  void SetOmitNullErrorId(bool omit) { omit_null_error_id_ = omit; }

  // 2025-03-26 says a receiver MUST accept JSON-RPC batches; the other revisions have
  // none, so a batch line is refused unless the negotiated revision is that one
  // (docs/wire.md §10). Set by initialize.
  void SetBatchesAccepted(bool accepted) { batches_accepted_ = accepted; }

  // Sends a request to the client; `handler` gets its answer or a timeout after
  // `timeout_ms`. Returns the id used.
  Json SendRequest(const std::string& method, OrderedJson params, int64_t timeout_ms,
                   ResponseHandler handler);

  // Abandons a request this server sent and is still waiting on: its answer, if one comes,
  // is ignored, and the client gets notifications/cancelled {requestId, reason}.
  void WithdrawRequest(const Json& id, std::string_view reason);

  // Marks the request with `id` cancelled: its eventual answer is not sent.
  // Returns true when such a request was in flight.
  bool CancelInFlight(const Json& id);

  // Queues one message; it is written as fast as the client reads (output_queue.h).
  void Send(const OrderedJson& message);
  // Queues the answer to `id` whose result is already minified JSON text, uncopied.
  void SendResultJson(const Json& id, JsonParts result);
  size_t pending_outgoing() const { return outgoing_.size(); }
  size_t queued_output_bytes() const { return out_.queued_bytes(); }
  bool reading_paused() const { return input_paused_; }
  // Reads no further request until ReleaseInput: a request that waits for the broker
  // itself (skill_run before the boot probe has decided) keeps every later line, the
  // end of input included, behind it. What was read already waits unframed.
  void HoldInput();
  void ReleaseInput();
  // At exit: hands the queued output to the client, giving up after `stall_ms` without
  // progress.
  void DrainOutput(int stall_ms) { out_.DrainBlocking(stall_ms); }

 private:
  friend class Reply;
  void OnReadable();
  void Consume(std::string_view data);
  void SchedulePump();
  void PauseInput();
  void ResumeInput();
  void Close();
  void SendError(const Json& id, int code, std::string_view message,
                 const std::shared_ptr<BatchAnswers>& batch = nullptr);
  // Queues one serialised line, or keeps it for its batch's answer (without the newline).
  void Deliver(const std::shared_ptr<BatchAnswers>& batch, std::string line);
  // One entry of `batch` has had its answer (or needs none); the last writes the batch.
  void EntryDone(const std::shared_ptr<BatchAnswers>& batch);
  void HandleLine(std::string_view line);
  void HandleBatch(std::string_view line);
  void HandleMessage(RpcMessage m, const std::shared_ptr<BatchAnswers>& batch);
  // True (and logged) when `id` is that of a request still in flight: the line is dropped.
  bool DropsReusedId(const Json& id);
  void HandleResponse(const RpcMessage& m);
  void Finish(const Json& id);

  EventLoop& loop_;
  int in_fd_;
  StdioFd in_;
  OutputQueue out_;
  LineReader reader_;
  bool closed_ = false;
  bool input_watched_ = false;         // in_ is in the loop (pollable input)
  bool input_paused_ = false;          // backpressure: too much output queued
  bool input_held_ = false;            // HoldInput: paused until ReleaseInput
  std::string pending_input_;          // read, not yet framed, while paused
  EventLoop::TimerId pump_timer_ = 0;  // input epoll refuses: the next chunk
  bool omit_null_error_id_ = false;
  bool batches_accepted_ = false;
  std::map<std::string, RequestHandler> requests_;
  std::map<std::string, NotificationHandler> notifications_;
  std::function<void()> on_closed_;
  // Requests from the client not yet answered, by serialised id.
  std::unordered_map<std::string, std::shared_ptr<Reply::State>> in_flight_;
  struct Outgoing {
    ResponseHandler handler;
    EventLoop::TimerId timer;
  };
  std::unordered_map<std::string, Outgoing> outgoing_;
  uint64_t next_id_ = 1;
};

}  // namespace skillmcp
