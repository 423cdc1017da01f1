// Node's process: kParentDeath, kChdir, kSeccomp, kExec. Under the namespace's init it is
// cloned with CLONE_VM | CLONE_VFORK, which copies no address space for a process that is
// about to exec (a fork and the faults that follow it cost about 0.7 ms more on a slow
// virtual machine). The parent is suspended until node's exec gives the child
// memory of its own, or the child exits; until then the child makes system calls only,
// on data the parent built (the ExecPlan, the prepared seccomp program): it allocates
// nothing, has no signal handler to run, and runs nothing of the script's.
#pragma once

#include <sys/types.h>

#include "seccomp/load.h"
#include "shared/worker_protocol.h"
#include "worker/exec.h"

namespace skillmcp::worker {

struct NodeLaunch {
  const RunSpec& spec;
  const ExecPlan& plan;
  const seccomp::PreparedPolicy* policy;  // nullptr: no filter (spec.seccomp false)
  pid_t parent;                           // for the parent-death check (kParentDeath)
  int close_first;                        // a descriptor of the parent's node must not keep, or -1
};

// Node's steps in the calling process: empty signal mask (kFork), kParentDeath the
// parent-death signal (SIGKILL) checked against `parent`, kChdir the skill directory as
// its cwd and fd 7 closed, kSeccomp the filter, kExec the exec; any failure is reported on
// fd 4 and exits with the step's code, as every step does. System calls only.
[[noreturn]] void BecomeNode(const NodeLaunch& launch);

// BecomeNode in a child cloned with CLONE_VM | CLONE_VFORK. Returns in the parent once
// the child has exec'd node or exited (its pid); a failed clone reports kFork. Used by
// the namespace's init, which node cannot signal (pid 1 ignores its namespace's signals
// it has no handler for); without namespaces node is forked (worker/main.cc says why).
pid_t LaunchNode(const NodeLaunch& launch);

}  // namespace skillmcp::worker
