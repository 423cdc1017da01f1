// The egress helper a broker starts for itself (stdio and the container; under systemd
// the socket-activated unit serves instead): skill-mcp-egress with one end of a
// SOCK_SEQPACKET socketpair as fd 3 (egress/README.md). Started once, at boot, before
// any run; it exits when the broker's end closes. A broker running as root starts it as
// the run-as identity: the helper needs no privilege, only the network.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "broker/loop/event_loop.h"
#include "broker/run/launch_config.h"
#include "shared/unique_fd.h"

namespace skillmcp {

class EgressHelperProcess {
 public:
  // Starts the helper at c.egress.helper_path; nullptr with `error` set when it could not.
  static std::unique_ptr<EgressHelperProcess> Start(EventLoop& loop, const LaunchConfig& c,
                                                    std::string* error);
  ~EgressHelperProcess();  // kills and reaps it
  EgressHelperProcess(const EgressHelperProcess&) = delete;
  EgressHelperProcess& operator=(const EgressHelperProcess&) = delete;

  // The broker's end of the connection (once).
  UniqueFd TakeConnection() { return std::move(connection_); }
  // The helper's pid while it runs, -1 once it exited and was reaped (the run reaper
  // spares it until then: broker/run/reaper.h).
  pid_t pid() const { return pid_; }

 private:
  EgressHelperProcess(EventLoop& loop) : loop_(loop) {}
  void OnExit();

  EventLoop& loop_;
  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd connection_;
};

}  // namespace skillmcp
