// What every run needs, resolved once at boot: the worker binary and the pinned
// interpreters, held open by descriptor (so a later swap of a path changes nothing), the
// run-as identity, the resource limits and the compiled seccomp program.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/harden/env_store.h"
#include "broker/harden/layers.h"
#include "broker/harden/privileges.h"
#include "broker/run/interpreters.h"
#include "broker/run/module_dirs.h"
#include "broker/run/namespace_probe.h"
#include "broker/run/network_mode.h"
#include "broker/run/run_uids.h"
#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"

namespace skillmcp {

struct LaunchConfig {
  UniqueFd worker;  // O_RDONLY|O_CLOEXEC; exec'd with execveat(AT_EMPTY_PATH)
  std::string worker_path;
  // SKILL_MCP_INTERPRETERS, each pinned (broker/run/interpreters.h); a run's is handed
  // to its worker as fd 5. An entry that could not be pinned has no descriptor, and
  // refusal says why.
  std::vector<PinnedInterpreter> interpreters;
  // The variable was set: the operator chose the set, and the willRun shows the path.
  bool interpreters_configured = false;
  bool switch_ids = false;  // workers switch to uid/gid below
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string run_as;  // how the identity was resolved, for reports
  // Own identity per run (broker/run/run_uids.h, run_identity.h): where set, each run
  // gets a uid of its own from this pool and keeps gid above; nullptr runs every script
  // as uid above. Shared: the supervisor takes leases through the const configuration.
  std::shared_ptr<RunUidPool> run_uids;
  bool run_uids_demanded = false;   // SKILL_MCP_RUN_UIDS names a range
  std::string run_uids_off_reason;  // why runs share one uid, when run_uids is null
  std::string run_uids_warning;     // on, with a weakness (private state dir, MCP_DATA_DIR)
  // The whole-run memory bound (broker/run/run_memory.h): the limit in bytes the
  // supervisor holds every run to, 0 when off; SKILL_MCP_LIMIT_RUN_MEMORY_MB (MiB, 0 or
  // off: none; unset: twice the per-process data limit).
  uint64_t run_memory_bytes = 0;
  bool run_memory_demanded = false;   // the variable names a limit
  std::string run_memory_off_reason;  // why runs have no whole-run memory bound
  RunLimits limits;
  bool seccomp = true;
  std::string seccomp_bpf;  // compiled once (CompileSeccompPolicy), handed to every worker
  // The same with the groups that shut the doors a run's view leaves open (seccomp
  // DoorFenceFor): the unix socket groups, or every no-view group.
  std::string seccomp_bpf_unix_fence;
  std::string seccomp_bpf_without_view;
  // The three again with the inet fence (network_off), compiled where the mode may settle
  // on off: SKILL_MCP_NETWORK=off, or declared before the probe has decided.
  std::string seccomp_bpf_inet;
  std::string seccomp_bpf_unix_fence_inet;
  std::string seccomp_bpf_without_view_inet;
  // The mirror's own filter (seccomp MirrorPolicyGroups), compiled where the mode may be
  // declared, for a declared run's mirror.
  std::string seccomp_bpf_mirror;
  // Serve compiles the policy after its first answer (libseccomp's compilation is about
  // 0.35 ms of the start): until then no run starts (RunSupervisor refuses).
  bool seccomp_pending = false;
  // Each run in its own user, mount, pid and IPC namespace (worker/namespaces.h,
  // worker/cell.h). SKILL_MCP_NAMESPACES=auto (the default) turns it on where the boot
  // probe succeeds and off with namespaces_off_reason where not; =on demands it.
  bool namespaces = false;
  bool namespaces_demanded = false;  // SKILL_MCP_NAMESPACES=on
  // The probe is still running (serve probes after start): nothing about the namespaces
  // is decided yet, and no run may start (RunSupervisor::StartCommitted refuses).
  bool namespaces_pending = false;
  std::string namespaces_problem;     // demanded, but the probe failed: runs are refused
  std::string namespaces_off_reason;  // auto, and the probe failed: runs go on without
  bool fresh_proc = false;            // namespaced runs get their own /proc
  std::string fresh_proc_problem;     // why not, when namespaces are on
  // Where users' sockets and secrets live (broker/run/private_places.h): hidden from
  // namespaced runs with the skills roots.
  std::vector<std::string> private_places;
  std::vector<std::string> hidden_roots;  // what those runs do not see (SetHiddenRoots)
  // SetHiddenRoots has not run yet (serve scans the catalogue after start): the skills
  // directories a run must not see are unknown, so no run may start (RunSupervisor).
  bool hidden_roots_pending = true;
  // The filesystem allowlist (worker/landlock.h): the ABI every run uses (0: off) and,
  // when off, why. SKILL_MCP_LANDLOCK=off|auto|on (auto by default: on where the kernel
  // has it).
  uint32_t landlock_abi = 0;
  bool landlock_demanded = false;  // SKILL_MCP_LANDLOCK=on
  std::string landlock_problem;
  // The network (broker/run/network_mode.h): the mode asked for and, settled by
  // SettleNetwork, what runs get: their own network and allowlist (egress_declared), or
  // none (network_off: the seccomp inet fence, and Landlock's TCP rules with ABI 4+).
  NetworkMode network_mode = NetworkMode::kDeclared;
  bool egress_declared = false;
  bool network_off = false;
  std::string network_fallback;  // why declared settled on off
  // The boot probe could not give a run its own network (the namespaces held): why.
  std::string network_problem;
  EgressSettings egress;
  // The node_modules beside each skills root, none inside a skill (SetHiddenRoots); each
  // run gets its own root's, checked at its start (broker/run/module_dirs.h).
  std::vector<RootModuleDirs> module_roots;
  std::string scratch_base;  // where each run's scratch directory is made
  std::string
      refusal;  // non-empty: why runs are refused (interpreter, worker, seccomp, namespaces)

  // The pinned interpreter named `name`, or nullptr.
  const PinnedInterpreter* Interpreter(std::string_view name) const;
  bool ready() const;
};

struct LaunchConfigResult {
  std::optional<LaunchConfig> config;
  std::string error;  // a bad option: the broker should not start (say it on stderr)
};

// Options: SKILL_MCP_WORKER, SKILL_MCP_INTERPRETERS (default node) and each one's path
// (SKILL_MCP_NODE, SKILL_MCP_PYTHON3), SKILL_MCP_SECCOMP (on|off),
// SKILL_MCP_NAMESPACES (auto|on|off, default auto: probes the host once; auto runs
// without them where the probe fails, on refuses runs then),
// SKILL_MCP_LANDLOCK (auto|on|off), SKILL_MCP_NETWORK (declared|on|off) and
// SKILL_MCP_EGRESS_* (broker/run/network_mode.h),
// SKILL_MCP_RUN_UIDS (A-B|off; unset: the default range where it can work), TMPDIR (the base of
// the runs' scratch directories; /tmp when unset or relative),
// SKILL_MCP_LIMIT_{NPROC,AS_MB,DATA_MB,CPU_SECONDS,FSIZE_MB,NOFILE} (strict positive
// integers). The run-as identity comes from what DropPrivileges resolved.
// kDeferred leaves two things for after start (serve): the namespace probe (namespaces_pending
// is then set when one is needed: run it with NamespaceProbeTask and hand the results to
// DecideNamespaces) and the seccomp compilation (seccomp_pending: CompileSeccompPolicy).
enum class NamespaceProbeTiming { kNow, kDeferred };
LaunchConfigResult ResolveLaunchConfig(const EnvStore& env, const PrivilegeState& privileges,
                                       NamespaceProbeTiming timing = NamespaceProbeTiming::kNow);

// Compiles the worker's seccomp policy where seccomp_pending; a failure refuses every run
// (refusal). Called once by ResolveLaunchConfig (kNow) or by serve after its first answer.
void CompileSeccompPolicy(LaunchConfig& c);

// The first probe (with a fresh /proc) failed only at that mount: probe again without it.
bool ProbeAgainWithoutFreshProc(const NamespaceProbe& first);

// Settles the namespace layer from the probe results (`second`: the probe without a
// fresh /proc, when ProbeAgainWithoutFreshProc asked for it, else nullptr): on, off with
// the reason (auto) or refused (on), then the hidden-roots limit of SetHiddenRoots. The
// last probe's failure at the run's own network (the step it tries last) is no failure
// of the namespaces: it sets network_problem, and the declared mode settles on off.
// Clears namespaces_pending.
void DecideNamespaces(LaunchConfig& config, const NamespaceProbe& first,
                      const NamespaceProbe* second);

// SKILL_MCP_LIMIT_RUN_MEMORY_MB (a strict positive integer, 0 or off; ResolveLaunchConfig
// reads it) into `c` (after c.limits is set), given why the broker cannot see its runs'
// processes ("" when it can, broker/run/run_memory.h): "" or the boot error. An explicit limit that
// cannot be enforced is kept as demanded with run_memory_bytes 0 (RunMemoryRefusal then refuses
// runs); the default one is off.
std::string ResolveRunMemory(const EnvStore& env, std::string_view blindness, LaunchConfig& c);

// Why runs are refused for the whole-run memory option (demanded, cannot work), or "".
std::string RunMemoryRefusal(const LaunchConfig& c);

// Pure: a strict positive decimal integer ("1".."18446744073709551615"), no sign,
// no spaces, no leading zero. nullopt otherwise.
std::optional<uint64_t> ParsePositive(std::string_view text);

// After the catalogue scan: the directories a namespaced run must not see, i.e. every
// skills root (real path) and every skill's parent directory, without "/", shortest
// first; and the node_modules directories per root (module_roots). More than
// kRunSpecMaxHiddenRoots refuses runs (a view could not be built); while the probe is
// pending that check waits for DecideNamespaces.
void SetHiddenRoots(LaunchConfig& config, const std::vector<std::string>& roots,
                    const std::vector<std::string>& skill_dirs);

// The list SetHiddenRoots keeps (resolves the roots with realpath; no other effect): the
// roots, the skills' parent directories and the private places, shortest first.
std::vector<std::string> HiddenRoots(const std::vector<std::string>& roots,
                                     const std::vector<std::string>& skill_dirs,
                                     const std::vector<std::string>& places = {});

// What the isolation report needs from this configuration.
WorkerLayerFacts LayerFacts(const LaunchConfig& config);

}  // namespace skillmcp
