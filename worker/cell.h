// The run's process shape (docs/isolation.md, "The run's processes"). The worker the
// broker started stays outside as the run's mirror: the broker's pidfd, process group,
// timeout signal and receipt all keep pointing at it. It forks the run (init clones
// node's process, worker/launch.h):
//   without namespaces:  worker (mirror) -> node
//   with namespaces:     worker (mirror) -> init (pid 1 of a new pid and IPC namespace)
//                                           -> node (pid 2)
// node is never pid 1, so the timeout's SIGTERM reaches it with its default action (pid 1
// ignores every signal it has no handler for). When node exits, init kills and reaps
// whatever else the run left in its namespace, reports the run's end to the broker on
// fd 4 (a WorkerExit: the broker answers on it) and exits; System V IPC goes with the
// IPC namespace. Without a namespace the mirror reports the end once it has reaped node.
// The mirror then exits with node's exit code or dies of node's signal, so the broker's
// pidfd sees what it saw when node was its own child (where no end was reported: init
// killed, or the report lost).
// Death with the broker: every process of the shape sets a parent-death signal after its
// last credential change and then checks that its parent is still the one it had; the
// mirror's is SIGHUP, on which it SIGKILLs its whole process group (the run cannot leave
// it: the seccomp filter refuses setsid and setpgid).
#pragma once

#include <sys/types.h>

#include "worker/step_result.h"

namespace skillmcp::worker {

class EgressRelay;

// kPidNamespace: unshare(CLONE_NEWPID | CLONE_NEWIPC). Call after the user namespace
// (whose capabilities it needs); the next fork is the namespace's init.
StepResult EnterPidIpcNamespace();

// kMountProc: a /proc of the run's own pid namespace over /proc (nosuid, nodev, noexec).
// Call in the namespace's init, in the run's mount namespace, with its capabilities.
StepResult MountFreshProc();

// kParentDeath: PR_SET_PDEATHSIG(sig), then refuse to go on unless getppid() is still
// `parent` (it died before the signal was armed: nothing would ever deliver it).
StepResult DieWithParent(int sig, pid_t parent);

// The same for the namespace's init, whose parent lives outside its pid namespace
// (getppid() is 0 there): alive means `parent_pidfd` has not become readable.
StepResult DieWithParentPidfd(int sig, int parent_pidfd);

// Blocks SIGCHLD, SIGHUP and SIGTERM before the mirror forks (so none is lost to a
// default action in between); ResetSignalMask() restores an empty mask in the child.
StepResult BlockMirrorSignals();
StepResult ResetSignalMask();

// The mirror, after the fork (parent side). `child` is node or the namespace's init;
// `status_fd` (-1 without namespaces) is where init writes node's wait status.
// `broker` is the worker's parent at start. Waits for the child, kills the process group
// if the broker dies; where the child was node, reports the run's end on fd 4; then exits
// with node's code or dies of node's signal.
// In the declared network mode `relay` is the run's egress (worker/egress_relay.h), served
// between the waits and finished (its last reports sent) before the exit; null otherwise.
[[noreturn]] void MirrorRun(pid_t child, int status_fd, pid_t broker, EgressRelay* relay);

// The namespace's init after cloning node: reaps every orphan; when node exits, writes
// its wait status to `status_fd`, kills and reaps every process left in the namespace,
// reports the run's end on fd 4 and exits.
[[noreturn]] void RunInit(pid_t node, int status_fd);

}  // namespace skillmcp::worker
