#include "broker/run/run_description.h"

#include <sodium.h>

#include <vector>

#include "broker/run/data_dir.h"
#include "broker/run/module_dirs.h"
#include "seccomp/policy.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

// The run description for one prepared run; the values of the variables are wiped
// again by the caller once encoded.
RunSpec BuildSpec(const PreparedRun& run, const PinnedInterpreter& interpreter,
                  const LaunchConfig& config, const EnvStore& env, const std::string& scratch,
                  uint32_t uid) {
  RunSpec spec;
  spec.interpreter = interpreter.kind;
  if (interpreter.kind != InterpreterKind::kNode) spec.interpreter_path = interpreter.path;
  spec.script_path = run.script_real_path;
  spec.args = run.args;
  for (const std::string& name : run.env_names) {
    // why: TMPDIR is always the run's own scratch directory, never a shared one.
    if (name == "TMPDIR") continue;
    // why: an unset (or blank/placeholder) name is absent from the block, never empty.
    env.WithValue(name,
                  [&](std::string_view v) { spec.envp.push_back(name + "=" + std::string(v)); });
  }
  spec.switch_ids = config.switch_ids;
  spec.uid = uid;
  spec.gid = config.gid;
  spec.limits = config.limits;
  spec.seccomp = config.seccomp;
  // why a larger filter where the view leaves a door open: no view (or one the host's
  // /proc leads around) hides the user's sockets, IPC and files outside, and only Landlock
  // ABI 6 scopes abstract sockets (seccomp DoorFenceFor).
  // why the inet set where the network is off: no IPv4 or IPv6 socket at all, whatever
  // Landlock this kernel has (broker/run/network_mode.h).
  const bool inet = config.network_off;
  switch (seccomp::DoorFenceFor(config.namespaces, config.fresh_proc, config.landlock_abi)) {
    case seccomp::DoorFence::kNone:
      spec.seccomp_bpf = inet ? config.seccomp_bpf_inet : config.seccomp_bpf;
      break;
    case seccomp::DoorFence::kUnixSockets:
      spec.seccomp_bpf = inet ? config.seccomp_bpf_unix_fence_inet : config.seccomp_bpf_unix_fence;
      break;
    case seccomp::DoorFence::kNoView:
      spec.seccomp_bpf =
          inet ? config.seccomp_bpf_without_view_inet : config.seccomp_bpf_without_view;
      break;
  }
  // why: the broker's rules, fixed when the run was confirmed (skill_run), travel to the
  // run's resolver and listeners; the broker checks every connection against them again.
  if (config.egress_declared) {
    spec.egress_declared = true;
    if (run.egress) spec.egress_rules = *run.egress;
    if (config.seccomp) spec.mirror_bpf = config.seccomp_bpf_mirror;
  }
  // why only its own root's: another root's node_modules is no business of this run.
  std::vector<ModuleDir> module_dirs;
  if (config.namespaces || config.landlock_abi > 0)
    module_dirs = RunModuleDirs(config.module_roots, run.skill_dir_path);
  if (config.namespaces) {
    spec.namespaces = true;
    spec.skill_dir_path = run.skill_dir_path;
    spec.hidden_roots = config.hidden_roots;
    spec.fresh_proc = config.fresh_proc;
    spec.read_dirs = module_dirs;  // bound back over the covers (worker/namespaces.h)
  }
  spec.scratch_dir_path = scratch;
  spec.envp.push_back("TMPDIR=" + scratch);
  if (config.landlock_abi > 0) {
    spec.landlock_abi = config.landlock_abi;
    spec.network_off = config.network_off && config.landlock_abi >= 4;
    spec.node_dir_path = interpreter.dir;
    spec.read_dirs = module_dirs;
  }
  // why a normalised path: the worker keeps the rule out of the operator's directories
  // and compares rules with each other (broker/run/data_dir.h), and a namespaced view
  // binds it back writable where a hidden place holds it. One that cannot be resolved
  // gets no rule and no bind (a run cannot write there). The script still sees it as set.
  if (config.landlock_abi > 0 || config.namespaces)
    env.WithValue("MCP_DATA_DIR",
                  [&](std::string_view v) { spec.data_dir_path = DataDirRulePath(v); });
  return spec;
}

}  // namespace

std::optional<std::string> EncodeRunDescription(const PreparedRun& run,
                                                const PinnedInterpreter& interpreter,
                                                const LaunchConfig& config, const EnvStore& env,
                                                const std::string& scratch, uint32_t uid) {
  RunSpec spec = BuildSpec(run, interpreter, config, env, scratch, uid);
  std::optional<std::string> encoded = EncodeRunSpec(spec);
  for (std::string& e : spec.envp) WipeString(e);  // why: values leave plain memory at once
  return encoded;
}

void WipeString(std::string& s) {
  if (!s.empty()) sodium_memzero(s.data(), s.size());
  s.clear();
}

}  // namespace skillmcp
