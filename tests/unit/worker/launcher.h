// A small test launcher around the broker's own spawn (broker/run/spawn.h): starts the
// REAL skill-mcp-worker, feeds the spec, collects output and the worker report.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "shared/worker_protocol.h"

namespace skillmcp::testing {

struct Launch {
  std::string spec_bytes;    // written to fd 3, then EOF
  std::string program_path;  // opened O_RDONLY as fd 5 (empty: fd 5 left closed)
  std::string script_path;   // opened O_RDONLY as fd 6 (empty: fd 6 left closed)
  int script_fd = -1;        // or an already open fd to use as fd 6
  int program_fd = -1;       // or an already open fd to use as fd 5
  std::string dir_path;      // opened O_PATH|O_DIRECTORY as fd 7 (empty: closed)
  bool close_stdin = false;  // leave fd 0 closed (a broken broker)
  int timeout_seconds = 30;
  // Before exec'ing the worker, the child switches to this uid/gid (to play an
  // unprivileged broker). Root only.
  std::optional<uid_t> broker_uid;
  // Before exec'ing the worker, the child (root) sets SECBIT_NOROOT and passes only these
  // capabilities through the ambient set: the worker starts as uid 0 holding just them,
  // with the full bounding set (a root broker in a container that dropped the rest).
  std::optional<std::vector<int>> root_keeps_only_caps;
  // With broker_uid: keep these capabilities across the uid change and pass them on as
  // ambient capabilities (a non-root broker started with AmbientCapabilities=).
  std::vector<int> broker_ambient_caps;
  std::vector<std::string> worker_env{"WORKER_ONLY_SECRET=must-not-reach-the-script"};
};

struct LaunchResult {
  int wait_status = 0;  // raw waitpid status of the worker process
  std::string out, err;
  struct Failure {
    int32_t step = 0;
    int32_t err = 0;
  };
  std::optional<Failure> failure;  // the report on fd 4, if one was written and decoded
  std::optional<WorkerExit> end;   // the run's end on fd 4, if one was written
  // When the end was read, something still held the write end of stdout (a process of the
  // run was alive then: node, init and the mirror have closed theirs by the end).
  bool out_held_at_end = false;
  bool timed_out = false;

  bool Exited() const;
  bool SpawnFailed(int err_no) const;  // spawn's child failed (e.g. exec of the worker)
  int ExitCode() const;          // -1 if not exited
  int Signal() const;            // 0 if not signalled
  std::string Describe() const;  // for assertion messages
};

LaunchResult RunWorker(const Launch& launch);

// Paths baked in by meson.
const char* WorkerPath();
const char* ProbePath();

}  // namespace skillmcp::testing
