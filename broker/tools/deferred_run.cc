#include "broker/tools/deferred_run.h"

#include <utility>

namespace skillmcp {

DeferredRunTool::DeferredRunTool(std::function<void()> hold, std::function<void()> release)
    : hold_(std::move(hold)), release_(std::move(release)) {}

void DeferredRunTool::Open(std::unique_ptr<RunToolHandler> handler) {
  handler_ = std::move(handler);
  std::vector<Waiting> waiting = std::move(waiting_);
  waiting_.clear();
  for (Waiting& w : waiting) w.call(*handler_);
  // Only after the waiting calls: the requests read next come after their answers.
  if (held_ && release_) release_();
  held_ = false;
}

void DeferredRunTool::Forward(const Json& request_id,
                              std::function<void(RunToolHandler&)> call) {
  if (handler_) return call(*handler_);
  // why: the call must not see the run side before it is decided (a refusal it would get,
  // the layers its run gets); it waits, and so does every request after it.
  if (!held_ && hold_) hold_();
  held_ = true;
  waiting_.push_back(Waiting{request_id, std::move(call)});
}

void DeferredRunTool::Call(const Json& args, const Json& request_id, bool client_elicits,
                           ToolDone done) {
  Forward(request_id, [args, request_id, client_elicits, done = std::move(done)](
                          RunToolHandler& h) mutable {
    h.Call(args, request_id, client_elicits, std::move(done));
  });
}

void DeferredRunTool::CallRound(const Json& args, const Json& request_id,
                                const RoundCall& round, ToolDone done, AskDone ask) {
  Forward(request_id, [args, request_id, round, done = std::move(done),
                       ask = std::move(ask)](RunToolHandler& h) mutable {
    h.CallRound(args, request_id, round, std::move(done), std::move(ask));
  });
}

void DeferredRunTool::Cancel(const Json& request_id) {
  if (handler_) return handler_->Cancel(request_id);
  // A waiting call that is cancelled is dropped: nothing of it has started, and the
  // session sends no answer to a cancelled request.
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->request_id == request_id) {
      waiting_.erase(it);
      return;
    }
  }
}

}  // namespace skillmcp
