// skill-mcp-worker: one per skill_run. The broker forks, lays out the descriptors named in
// shared/worker_protocol.h and execs this binary; it restricts itself step by step and execs
// the pinned interpreter. The sequence below is ordered and all-fatal: a step that fails
// reports WorkerReport{step, errno} on fd 4 and exits with the step's code, so a
// half-restricted process never runs anything (shared/worker_protocol.h).
// A probe (RunSpec::probe) stops after the run-independent namespace steps and exits 0.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

#include "seccomp/load.h"
#include "shared/worker_protocol.h"
#include "worker/caps.h"
#include "worker/exec.h"
#include "worker/fds.h"
#include "worker/identity.h"
#include "worker/landlock.h"
#include "worker/limits.h"
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
// not depend on a run, in the run's order, so it fails exactly where a run would.
[[noreturn]] void Probe(const RunSpec& spec) {
  if (spec.switch_ids) Check(SwitchIds(spec.uid, spec.gid));
  Check(EnterUserNamespace());
  Check(MountPrivateTmp());
  _exit(0);
}

void Run() {
  // 1. The run description, bounded, strictly decoded.
  RunSpec spec;
  Check(ReadRunSpec(kWorkerSpecFd, spec));
  // 2. The descriptor layout is what the contract says.
  Check(CheckInheritedFds(spec.probe));
  if (spec.probe) Probe(spec);
  // 3. Own session and process group (the broker's timeout signals the group).
  Check(StartOwnSession());
  // 4. Nothing inherited beyond 0..2 and 4..7.
  Check(CloseInheritedFds());
  // 5. Resource limits while we may still lower anything; RLIMIT_CORE = 0 always.
  Check(ApplyLimits(spec.limits));
  // Whether any uid is still 0 at exec decides how strict the capability steps are.
  const bool will_be_root = spec.switch_ids ? false : AnyRootUid();
  // 6. Securebits and 7. the bounding set: both need CAP_SETPCAP, which the uid switch
  //    may take away, so they come first.
  Check(LockSecurebits());
  Check(DropBoundingSet(will_be_root));
  // 8. The identity switch, when the broker may switch (root or CAP_SETUID/CAP_SETGID).
  if (spec.switch_ids) {
    Check(CheckTargetIds(spec.uid, spec.gid));
    Check(SwitchIds(spec.uid, spec.gid));
  }
  // 8b. With namespaces: the run's own user and mount namespace and filesystem view
  //     (worker/namespaces.h). The worker holds CAP_SETPCAP over the new namespace, so
  //     the bounding set is emptied now even where step 7 lacked the capability.
  if (spec.namespaces) {
    Check(EnterRunView(spec));
    Check(DropBoundingSet(/*eperm_is_fatal=*/true));  // every drop must succeed
  }
  // 9. Ambient, effective, permitted and inheritable capabilities: all cleared.
  Check(ClearCapabilities());
  // 10. Verify: the ids cannot be switched back, no capability is left.
  if (spec.switch_ids) Check(VerifyIds(spec.uid, spec.gid));
  Check(VerifyCapabilities(will_be_root));
  // 11. no_new_privs: exec never grants privileges again (setuid bits, file caps), and
  //     an unprivileged process may install a seccomp filter.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailAndExit({WorkerStep::kNoNewPrivs, errno});
  // 11b. The filesystem allowlist (worker/landlock.h): after no_new_privs, which the
  //      kernel requires, and after the run's mounts; fd 7 is still open for its rule.
  Check(ApplyLandlock(spec, kWorkerSkillDirFd));
  // 12. The skill directory becomes the cwd; its descriptor does not reach the script.
  //     In the run's view, by its bound path: fd 7 belongs to the host's mount
  //     namespace, where ".." would lead back to the hidden skills.
  if (spec.namespaces) {
    Check(EnterBoundSkillDir(spec.skill_dir_path, kWorkerSkillDirFd));
  } else if (fchdir(kWorkerSkillDirFd) != 0) {
    FailAndExit({WorkerStep::kChdir, errno});
  }
  close(kWorkerSkillDirFd);
  // argv/envp are built before the filter so that nothing but the exec follows it.
  const ExecPlan plan(spec);
  // 13. Seccomp last: every earlier step may use what the filter denies.
  //     The program was compiled by the broker at boot; the kernel verifies it.
  if (spec.seccomp) {
    if (int rc = seccomp::LoadCompiledPolicy(spec.seccomp_bpf); rc < 0)
      FailAndExit({WorkerStep::kSeccomp, -rc});
  }
  // 14. Exec the interpreter by descriptor. Returns only on failure.
  FailAndExit(plan.Exec());
}

}  // namespace
}  // namespace skillmcp::worker

int main() {
  skillmcp::worker::Run();
  return 0;  // not reached
}
