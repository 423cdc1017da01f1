// skill-mcp-worker: one per skill_run. The broker forks, lays out the descriptors named in
// shared/worker_protocol.h and execs this binary; it restricts itself step by step and execs
// the pinned interpreter. It reads as two ordered lists, every step fatal: TakeCellSteps,
// what a worker started ahead does while it waits for its run, and TakeRunSteps, the run
// itself, which ends in StartRun, the run's processes. Each step is named by the
// WorkerStep code a failure reports: the process it fails in writes WorkerReport{step,
// errno} on fd 4 and exits with that code, so a half-restricted process never runs
// anything (shared/worker_protocol.h). A whole description on a pipe takes the same steps
// in the same order. A probe (RunSpec::probe) takes its own short list (Probe) and exits 0.
// The worker stays outside the run as its mirror (worker/cell.h: the process shape, and
// why node is never pid 1; with namespaces init clones node's process, worker/launch.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>

#include "seccomp/load.h"
#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/caps.h"
#include "worker/cell.h"
#include "worker/egress_cell.h"
#include "worker/egress_relay.h"
#include "worker/exec.h"
#include "worker/fds.h"
#include "worker/identity.h"
#include "worker/landlock.h"
#include "worker/launch.h"
#include "worker/limits.h"
#include "worker/mirror_seccomp.h"
#include "worker/namespaces.h"
#include "worker/report.h"
#include "worker/session.h"
#include "worker/spec_input.h"

namespace skillmcp::worker {
namespace {

void Check(const StepResult& result) {
  if (result) FailAndExit(*result);
}

// The broker's boot probe: the identity switch, then the parts of the run's view that do
// not depend on a run, in the run's order, so it fails exactly where a run would: the
// user and mount namespace, the private /tmp, the covers of the operator's directories,
// the view made read-only (mount_setattr), the pid and IPC namespace and its init, which mounts the
// fresh /proc when asked (the broker asks again without it on failure), and in the declared
// network mode, last, the run's own network (kOwnNetwork).
[[noreturn]] void Probe(const RunSpec& spec) {
  if (spec.switch_ids) Check(SwitchIds(spec.uid, spec.gid));  // kSetGroups..kSetUid
  Check(EnterUserNamespace());                                // kUserNamespace
  Check(MountPrivateTmp());                                   // kMountView
  Check(CoverOperatorConfig());                               // kMountView
  Check(MakeViewReadOnly({"/tmp"}));                          // kReadOnlyView
  Check(EnterPidIpcNamespace());                              // kPidNamespace
  const pid_t init = fork();
  if (init < 0) FailAndExit({WorkerStep::kFork, errno});
  if (init == 0) {
    if (spec.fresh_proc) Check(MountFreshProc());  // kMountProc
    _exit(getpid() == 1 ? 0 : static_cast<int>(WorkerStep::kPidNamespace));
  }
  int status = 0;
  while (waitpid(init, &status, 0) < 0) {
    if (errno != EINTR) FailAndExit({WorkerStep::kFork, errno});
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : static_cast<int>(WorkerStep::kFork));
  // Last, so a failure here says only that the declared network mode cannot be had: the
  // run's own network namespace, its loopback, resolver socket and files.
  if (spec.egress_declared) {
    EgressCell cell;
    Check(EnterOwnNetwork(cell));   // kOwnNetwork
    Check(FinishOwnNetwork(cell));  // kOwnNetwork
  }
  _exit(0);
}

// kRefuseRootIds, kSetGroups, kSetGid, kSetUid: refuse root and the broker's ids, switch
// every id, and stay non-dumpable (kSetUid).
void SwitchIdentity(uint32_t uid, uint32_t gid) {
  Check(CheckTargetIds(uid, gid));
  Check(SwitchIds(uid, gid));
  // why: the switch reset the dumpable flag to fs.suid_dumpable, which a host may set to
  // 1; a worker waiting under the run's uid stays closed to that uid's processes.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Check(StepFailed(WorkerStep::kSetUid, errno));
}

// kUserNamespace, kMountView, kSecurebits, kDropBounding, kPidNamespace: the view's first
// half and the pid and IPC namespace (worker/namespaces.h, worker/cell.h). The worker
// holds CAP_SETPCAP over the new user namespace, so the bounding set is emptied now even
// where the first drop lacked the capability. why the securebits again: unshare
// (CLONE_NEWUSER) resets them to the unlocked default, so the first lock is gone; they
// are locked anew here, for root and unprivileged brokers alike, before CAP_SETPCAP goes
// with the capability steps.
void EnterNamespaces(const std::vector<std::string>& hidden_roots, const std::string& node_dir,
                     PendingView& view) {
  Check(BeginRunView(hidden_roots, node_dir, view));
  Check(LockSecurebits(/*missing_cap_is_fatal=*/true));
  Check(DropBoundingSet(/*eperm_is_fatal=*/true));  // every drop must succeed
  Check(EnterPidIpcNamespace());
}

// What every process of the run does before node, in the process that becomes node or
// clones it: no capability left (verified), and no_new_privs: exec never grants
// privileges again (setuid bits, file caps), and an unprivileged process may install a
// seccomp filter.
void DropPrivilegesForGood(const RunSpec& spec, bool will_be_root, LandlockAhead& landlock) {
  Check(ClearCapabilities());                                 // kDropAmbient, kDropCaps
  if (spec.switch_ids) Check(VerifyIds(spec.uid, spec.gid));  // kVerifyIds
  Check(VerifyCapabilities(will_be_root));                    // kVerifyCaps
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailAndExit({WorkerStep::kNoNewPrivs, errno});
  // kLandlock. The filesystem allowlist (worker/landlock.h): after no_new_privs, which
  // the kernel requires, and after the run's mounts (fresh /proc included); fd 7 is
  // still open for its rule. Node inherits the domain of the process that forks it. With
  // a ruleset made ahead, only the run's own rules are added to it.
  Check(ApplyLandlock(spec, kWorkerSkillDirFd, landlock));
}

// The mirror's own steps before the fork, so that after it the run's first process does
// not wait behind them on the CPU they share: no_new_privs (kNoNewPrivs; the child sets
// it again in its own steps), and the tie to the broker (kParentDeath; a fork clears the
// parent-death signal in the child, which sets its own).
void PrepareMirror(pid_t broker) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailAndExit({WorkerStep::kNoNewPrivs, errno});
  // why: SIGHUP, not SIGKILL: the mirror must live long enough to kill the run's group.
  if (DieWithParent(SIGHUP, broker)) {
    kill(0, SIGKILL);
    _exit(static_cast<int>(WorkerStep::kParentDeath));
  }
}

// The mirror's side of the fork: it keeps no capability and no descriptor of the run's,
// and waits, tied to the broker (PrepareMirror; worker/cell.h). In the declared network
// mode with seccomp its own filter comes next (`mirror_bpf`): after the fork, so the run's
// processes never inherit it, once every socket of its own is made (kOwnNetwork), before
// it reads anything of the script's, and while fd 4 is open to report a failure.
[[noreturn]] void BecomeMirror(pid_t child, int status_fd, pid_t broker,
                               EgressCell* egress = nullptr, std::string_view mirror_bpf = {}) {
  StepResult r = ClearCapabilities();  // kDropAmbient, kDropCaps
  // why: it holds the helper's sockets and parses the script's input: no way to readdress one.
  if (!r && !mirror_bpf.empty()) r = LoadMirrorFilter(mirror_bpf);  // kMirrorSeccomp
  if (r) {
    kill(child, SIGKILL);
    FailAndExit(*r);
  }
  // The pipes reach EOF when the run's processes close them, not the mirror. The report
  // stays open where the child is node: the mirror reports the run's end (worker/cell.h).
  for (int fd : {0, 1, 2, kWorkerNodeFd, kWorkerScriptFd, kWorkerSkillDirFd, kWorkerBootstrapFd})
    close(fd);
  if (status_fd >= 0) close(kWorkerReportFd);
  if (egress == nullptr || !egress->channel.valid()) MirrorRun(child, status_fd, broker, nullptr);
  EgressRelay relay(std::move(*egress));
  MirrorRun(child, status_fd, broker, &relay);
}

// What node's steps need, built before them (in init, before the clone; worker/launch.h):
// argv and envp, the bootstrap's way, and the filter in aligned instructions (kSeccomp
// for a program the kernel would refuse). The way is chosen in the run's final view and
// Landlock domain, where node will look for it.
struct NodeImage {
  NodeImage(const RunSpec& spec, bool bootstrap_sealed)
      // why: the sealed copy at fd 8 is node's bootstrap; any other interpreter never
      // inherits it (ChooseBootstrapVia closes it).
      : plan(spec,
             ChooseBootstrapVia(bootstrap_sealed && spec.interpreter == InterpreterKind::kNode)) {
    if (spec.seccomp) {
      if (int rc = seccomp::PreparePolicy(spec.seccomp_bpf, policy); rc < 0)
        FailAndExit({WorkerStep::kSeccomp, -rc});
      filter = &policy;
    }
  }
  NodeImage(const NodeImage&) = delete;  // `filter` points into this object
  NodeImage& operator=(const NodeImage&) = delete;
  ExecPlan plan;
  seccomp::PreparedPolicy policy;
  const seccomp::PreparedPolicy* filter = nullptr;  // null: no filter (spec.seccomp false)
};

// What the cell's steps leave for the run's.
struct Cell {
  CellSpec spec;
  std::optional<RunSpec> whole;  // fd 3 a pipe: the description came whole, with the cell
  bool bootstrap_sealed = false;
  bool will_be_root = false;  // any uid still 0 at exec: how strict the capability steps are
  PendingView view;           // with the view ahead, its first half
  LandlockAhead landlock;     // with the rules ahead, the ruleset
  UniqueFd egress_channel;    // in the declared network mode: to the broker, the mirror's
  EgressCell egress;          // in the declared network mode, from kOwnNetwork on
};

// kFork onwards: the run's processes. The worker stays outside as the mirror; without
// namespaces it forks node, with them the namespace's init, which clones node
// (worker/launch.h).
[[noreturn]] void StartRun(const RunSpec& spec, pid_t broker, Cell& cell) {
  if (!spec.namespaces) {
    // why fork, not the clone: node's process drops privileges and enters the Landlock
    // domain itself, so the mirror stays outside it, where the script's signals cannot
    // reach it (Landlock's signal scope) and stop it before it can kill the run's group.
    const pid_t mirror = getpid();
    Check(BlockMirrorSignals());  // kFork
    PrepareMirror(broker);        // kNoNewPrivs, kParentDeath
    const pid_t node = fork();
    if (node < 0) FailAndExit({WorkerStep::kFork, errno});
    if (node > 0) {
      cell.landlock.ruleset.reset();  // the run's, not the mirror's
      BecomeMirror(node, -1, broker);
    }
    DropPrivilegesForGood(spec, cell.will_be_root, cell.landlock);  // kDropAmbient..kLandlock
    const NodeImage image(spec, cell.bootstrap_sealed);             // kSeccomp
    // kParentDeath, kChdir, kSeccomp, kExec (worker/launch.h).
    BecomeNode({spec, image.plan, image.filter, mirror, -1});
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) FailAndExit({WorkerStep::kFork, errno});
  UniqueFd status_r(p[0]), status_w(p[1]);
  // init's parent lives outside its pid namespace: it watches the mirror by pidfd.
  UniqueFd self(static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0)));
  if (!self.valid()) FailAndExit({WorkerStep::kFork, errno});
  Check(BlockMirrorSignals());  // kFork
  PrepareMirror(broker);        // kNoNewPrivs, kParentDeath
  const pid_t init = fork();
  if (init < 0) FailAndExit({WorkerStep::kFork, errno});
  if (init > 0) {
    status_w.reset();
    self.reset();
    cell.landlock.ruleset.reset();  // the run's, not the mirror's
    // kDropAmbient, kDropCaps, then in the declared mode kMirrorSeccomp.
    BecomeMirror(init, status_r.get(), broker, &cell.egress, spec.mirror_bpf);
  }
  // The namespace's init (pid 1).
  Check(ResetSignalMask());  // kFork
  status_r.reset();
  // why: the resolver, the listeners, the tun device and the channel are the mirror's;
  // init and node are the run's and keep none of them.
  cell.egress.CloseAll();
  if (spec.fresh_proc) Check(MountFreshProc());                   // kMountProc
  DropPrivilegesForGood(spec, cell.will_be_root, cell.landlock);  // kDropAmbient..kLandlock
  // kParentDeath, set after the last credential change (a change of credentials clears it).
  Check(DieWithParentPidfd(SIGKILL, self.get()));
  self.reset();
  const NodeImage image(spec, cell.bootstrap_sealed);  // kSeccomp
  // kFork, then in node's process kParentDeath, kChdir, kSeccomp, kExec (worker/launch.h).
  // node's parent is init, pid 1 of the namespace; if init is gone the namespace is too.
  const pid_t node = LaunchNode({spec, image.plan, image.filter, 1, status_w.get()});
  // fd 4 stays: init reports the run's end on it once its namespace is empty.
  for (int fd : {0, 1, 2, kWorkerNodeFd, kWorkerScriptFd, kWorkerSkillDirFd, kWorkerBootstrapFd})
    close(fd);
  RunInit(node, status_w.release());
}

// The cell: the steps a worker started ahead (fd 3 a socket) takes while it waits for its
// run, in this order. On a pipe the whole description came with the cell (CellOf: its ids,
// view and network ahead, never the Landlock rules) and the same steps run.
void TakeCellSteps(Cell& cell) {
  // kReadSpec. Not dumpable while it waits: no process of another run (or of the same
  // uid) can open its /proc/<pid>/mem or environ. Exec gives node the usual state back.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) Check(StepFailed(WorkerStep::kReadSpec, errno));
  // kReadSpec. The cell, or on a pipe the whole description, bounded and strictly decoded.
  Check(ReadCellSpec(kWorkerSpecFd, cell.spec, cell.whole));
  // kCheckFds. The descriptor layout is what the contract says (6 and 7 come with the run).
  const bool probe = cell.whole && cell.whole->probe;
  Check(CheckStartFds(probe));
  if (probe) Probe(*cell.whole);
  // kSetsid. Own session and process group: the broker's timeout signals the group.
  Check(StartOwnSession());
  // kCloseFds. Nothing inherited beyond 0..2 and 3..7.
  Check(CloseInheritedFds());
  // No code: the bootstrap sealed at fd 8, before the limits (worker/exec.h); best effort,
  // without it node gets the same bootstrap with -e.
  cell.bootstrap_sealed = SealBootstrap();
  cell.will_be_root = cell.spec.switch_ids ? false : AnyRootUid();
  // kSecurebits, kDropBounding. Both need CAP_SETPCAP, which the uid switch may take away.
  Check(LockSecurebits());
  Check(DropBoundingSet(cell.will_be_root));
  // kRefuseRootIds..kSetUid, where the cell names the run's own uid (the broker may switch:
  // root or CAP_SETUID/CAP_SETGID).
  if (cell.spec.ids_ahead) SwitchIdentity(cell.spec.uid, cell.spec.gid);
  // kUserNamespace..kPidNamespace, where the cell asks for the view ahead: its first half;
  // the second binds what the description names (FinishRunView).
  // Node's prefix is named by the cell where the Landlock rules are made ahead, else by a
  // whole description (a pipe); a cell that names neither has no Landlock rule to need it.
  if (cell.spec.view_ahead)
    EnterNamespaces(cell.spec.hidden_roots,
                    cell.whole ? cell.whole->node_dir_path : cell.spec.node_dir_path, cell.view);
  // kOwnNetwork, where the cell asks for the network ahead (only with the view ahead, a
  // declared run's): its first half, the network namespace, loopback, the tun route and
  // the resolver's socket, made with the capabilities over the view's user namespace; the
  // rules' listeners and the resolver files wait for the description (FinishOwnNetwork).
  if (cell.spec.network_ahead) Check(EnterOwnNetwork(cell.egress));
  // kLandlock, where the cell asks for the rules ahead: the ruleset with the rules no run
  // changes, each path opened now as the run's user and in the run's view (the cell asks
  // only once both are settled); the run adds its own to it (worker/landlock.h).
  if (cell.spec.landlock_ahead) Check(PrepareLandlockAhead(cell.spec, cell.landlock));
}

// The run: the steps that need its description, in this order, then its processes.
[[noreturn]] void TakeRunSteps(Cell& cell, pid_t broker) {
  RunSpec spec;
  // kReadSpec. The run, which must ask for this very cell, with the script and skill
  // directory descriptors (a worker started ahead receives them now; a pipe had it whole).
  if (cell.whole) {
    spec = std::move(*cell.whole);
  } else {
    Check(ReadRunSpecAfterCell(kWorkerSpecFd, cell.spec, spec, cell.egress_channel));
  }
  // kCheckFds. 6 a regular file, 7 a directory.
  Check(CheckRunFds());
  // kCloseFds. The description is read: 3 goes, 6 is node's, 7 is not.
  Check(CloseSpecFd());
  // kSetLimits. Lowered only, RLIMIT_CORE = 0 always. why after the read: a tight
  // RLIMIT_NOFILE or RLIMIT_DATA must not fail the receipt of 6 and 7 or the description
  // itself, only the run.
  Check(ApplyLimits(spec.limits));
  // kRefuseRootIds..kSetUid, where the cell named no ids: the run-as uid, or a run's own
  // from a small range.
  if (spec.switch_ids && !cell.spec.ids_ahead) SwitchIdentity(spec.uid, spec.gid);
  // kUserNamespace..kPidNamespace, with namespaces where the cell did not build the view
  // ahead: its first half (worker/namespaces.h) and the pid and IPC namespace.
  if (spec.namespaces && !cell.spec.view_ahead)
    EnterNamespaces(spec.hidden_roots, spec.node_dir_path, cell.view);
  // kMountView, then kReadOnlyView, with namespaces: the view's second half, what the
  // description names, then every mount read-only but the run's own places.
  if (spec.namespaces) Check(FinishRunView(spec, cell.view));
  // kOwnNetwork, in the declared network mode, while the capabilities over the user
  // namespace are still held: the run's network namespace, loopback, tun route and
  // resolver's socket where the cell did not make them ahead, then the listeners for its
  // rules' ports and the resolver files, staged in its scratch directory and bound over
  // the finished view's.
  if (spec.egress_declared) {
    if (!cell.spec.network_ahead) Check(EnterOwnNetwork(cell.egress));
    cell.egress.channel = std::move(cell.egress_channel);
    cell.egress.rules = spec.egress_rules;
    cell.egress.stage_parent = spec.scratch_dir_path;
    Check(FinishOwnNetwork(cell.egress));
  }
  // kFork onwards: the mirror, init and node, each with its own steps (StartRun).
  StartRun(spec, broker, cell);
}

void Run() {
  // The broker, as the worker's parent: the parent-death checks compare against it.
  const pid_t broker = getppid();
  Cell cell;
  TakeCellSteps(cell);
  TakeRunSteps(cell, broker);
}

}  // namespace
}  // namespace skillmcp::worker

int main() {
  skillmcp::worker::Run();
  return 0;  // not reached
}
