// The state of the one run a RunSupervisor (broker/run/supervisor.h) watches, from its
// start to its answer: what it holds until then, what has come from it, where it stands.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "broker/loop/event_loop.h"
#include "broker/run/prepared_run.h"
#include "broker/run/run_egress.h"
#include "broker/run/run_result.h"
#include "broker/run/run_uids.h"
#include "broker/run/runner.h"
#include "broker/run/scratch_dir.h"
#include "shared/unique_fd.h"

namespace skillmcp {

struct SupervisedRun {
  // The run's own uid (broker/run/run_uids.h), released after its processes are killed
  // and reaped; declared first so that it is released last.
  std::optional<RunUidLease> uid_lease;
  uint32_t uid = 0;
  std::unique_ptr<ScratchDir> scratch;  // removed (with its tree) when the run is dropped
  PreparedRun prepared;                 // holds the script descriptor until the run settles
  Runner::Done done;
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd out_r, err_r, report_r, spec_w;
  // The declared network mode: the run's end of its egress channel, sent with the
  // description, and the broker's end's handler, torn down with the run.
  UniqueFd egress_run_end;
  std::unique_ptr<RunEgress> egress;
  std::string spec_bytes;
  size_t spec_off = 0;
  bool fds_sent = false;  // the script and skill directory went with the first bytes
  StreamCapture out, err;
  std::string report_buf;
  bool out_eof = false, err_eof = false, report_eof = false;
  bool exited = false;        // the run has ended: the worker exited, or reported the end
  bool end_reported = false;  // the worker's WorkerExit said so (the worker may still be exiting)
  int child_code = 0, child_status = 0;  // CLD_* and the code or signal (waitid's, or the end's)
  bool timed_out = false;
  std::optional<MemoryKill> memory_kill;  // the whole-run memory bound killed it
  bool settling = false;                  // Settle is on the stack: its drain must not re-enter it
  bool drain_expired = false;             // kDrainMs after the end: the pipes are not waited for
  int64_t start_ms = 0, exit_ms = 0;
  EventLoop::TimerId timeout_timer = 0, kill_timer = 0, drain_timer = 0, hard_timer = 0,
                     egress_timer = 0;
};

}  // namespace skillmcp
