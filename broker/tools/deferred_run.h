// skill_run before the run side is settled (serve probes the namespaces after start, so
// the first answer does not wait for it): a call that arrives earlier waits, with the
// client's later requests held behind it, and goes to the real handler once Open gives
// it. Nothing blocks the loop meanwhile; what the call then gets is exactly what it
// would have got had the probe finished first.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "broker/tools/tool.h"

namespace skillmcp {

class DeferredRunTool : public RunToolHandler {
 public:
  // `hold` stops the session reading further requests, `release` lets it read on
  // (Session::HoldInput / ReleaseInput).
  DeferredRunTool(std::function<void()> hold, std::function<void()> release);

  // From now on every call goes to `handler`; the calls that waited go first, in order.
  void Open(std::unique_ptr<RunToolHandler> handler);
  bool open() const { return handler_ != nullptr; }
  // At exit, once the loop has stopped: the handler goes, and with it what it still held
  // (SkillRunTool records a prompt or run the client left as cancelled).
  void Close() { handler_.reset(); }

  void Call(const Json& args, const Json& request_id, bool client_elicits,
            ToolDone done) override;
  void CallRound(const Json& args, const Json& request_id, const RoundCall& round,
                 ToolDone done, AskDone ask) override;
  void Cancel(const Json& request_id) override;

 private:
  // A call that waits: which request, and how to hand it to the handler. Every entry
  // point of RunToolHandler goes through Forward, so each one waits the same way.
  struct Waiting {
    Json request_id;
    std::function<void(RunToolHandler&)> call;
  };
  void Forward(const Json& request_id, std::function<void(RunToolHandler&)> call);

  std::function<void()> hold_, release_;
  std::unique_ptr<RunToolHandler> handler_;
  std::vector<Waiting> waiting_;
  bool held_ = false;  // hold_ was called and release_ is still due
};

}  // namespace skillmcp
