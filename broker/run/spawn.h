// Starting a worker: the one place that knows the descriptor layout of
// shared/worker_protocol.h. Creates the pipes, starts a child that borrows the broker's
// memory until its exec (CLONE_VM | CLONE_VFORK), places 0..7 and execs the worker
// binary by descriptor; the child makes system calls only. Everything after
// the exec (feeding the spec, reading, the timeout, the reap) is the caller's:
// broker/run/supervisor.h for runs, broker/run/namespace_probe.h for the boot probe.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "shared/unique_fd.h"

namespace skillmcp {

// fd 0 is always /dev/null, 1..4 the pipes spawn creates (shared/worker_protocol.h).
struct SpawnRequest {
  int worker_fd = -1;     // the worker binary, exec'd with execveat(AT_EMPTY_PATH)
  int node_fd = -1;       // placed as fd 5; -1 leaves 5 closed (a probe)
  int script_fd = -1;     // placed as fd 6; -1 leaves 6 closed
  int skill_dir_fd = -1;  // placed as fd 7; -1 leaves 7 closed
  // fd 3 a unix stream socket instead of a pipe: a worker started ahead of its run gets
  // 6 and 7 with its description (SCM_RIGHTS; broker/run/worker_pool.h).
  bool spec_socket = false;
  // Pass CAP_SETUID and CAP_SETGID (and CAP_SETPCAP where held) on as ambient
  // capabilities: an unprivileged broker holding them hands them to the worker, which
  // has no file capabilities.
  bool raise_ambient_setid = false;
  // The worker's environment; nullptr is none at all (the broker's case).
  char* const* worker_envp = nullptr;
};

// The parent's ends, all close-on-exec and blocking.
struct Spawned {
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd out;     // fd 1's read end
  UniqueFd err;     // fd 2's read end
  UniqueFd spec;    // fd 3's write end: write the encoded RunSpec, then close (a socket
                    // with SpawnRequest::spec_socket)
  UniqueFd report;  // fd 4's read end: a WorkerReport if a step failed, the run's end
                    // (WorkerExit) once node is reaped, EOF when the worker side is gone
};

struct SpawnError {
  std::string call;  // what failed: "pipe2", "fcntl", "mmap", "mprotect", "clone",
                     // "pidfd_open"
  int err = 0;
};

struct SpawnOutcome {
  std::optional<Spawned> spawned;
  SpawnError error;  // when !spawned
};

SpawnOutcome SpawnWorker(const SpawnRequest& request);

}  // namespace skillmcp
