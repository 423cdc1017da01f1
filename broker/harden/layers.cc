#include "broker/harden/layers.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "seccomp/policy.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

// A "Name:" line of /proc/self/status, or "" when the kernel does not report it.
std::string StatusField(const char* name) {
  std::string text;
  int err = 0;
  if (!ReadSmallFile("/proc/self/status", &text, &err)) return "";
  std::string key = std::string("\n") + name + ":";
  size_t at = text.find(key);
  if (at == std::string::npos) return "";
  size_t start = text.find_first_not_of(" \t", at + key.size());
  size_t end = text.find('\n', start);
  return text.substr(start, end - start);
}

Layer Make(const char* name, bool on, bool demanded, std::string reason, std::string enable) {
  Layer l;
  l.name = name;
  l.on = on;
  l.demanded = demanded;
  l.reason = std::move(reason);
  if (!on) l.enable = std::move(enable);
  return l;
}

// How runs' network is held (broker/run/network_mode.h): their own namespace and
// allowlist, none at all (seccomp's inet fence, Landlock's TCP rules), or the host's.
Layer NetworkLayer(const WorkerLayerFacts& w) {
  const bool demanded = w.network_mode != "on";
  const std::string mirror = w.seccomp_configured
                                 ? "; the run's mirror, which relays them, holds the helper's "
                                   "sockets under a seccomp filter of its own (no new socket, "
                                   "connect, bind or listen)"
                                 : "";
  if (w.egress_declared)
    return Make("network", true, true,
                "SKILL_MCP_NETWORK=declared: each run has a network namespace of its own with "
                "only loopback; its resolver answers only the hosts its skill declares" +
                    std::string(w.egress_patterns ? " that SKILL_MCP_EGRESS_ALLOW allows" : "") +
                    ", the broker checks every connection to them and the egress helper opens "
                    "it" +
                    std::string(w.egress_local ? " (non-global addresses too: "
                                                 "SKILL_MCP_EGRESS_LOCAL=on)"
                                               : " (global addresses only)") +
                    "; every other name, address and port is refused at once" + mirror,
                "");
  if (w.network_off) {
    const bool landlock_tcp = w.landlock_abi >= 4;
    const bool held = w.network_seccomp || landlock_tcp;
    const std::string how =
        w.network_seccomp
            ? std::string("runs cannot open an IPv4 or IPv6 socket (seccomp refuses it with "
                          "EPERM)") +
                  (landlock_tcp ? ", and Landlock refuses every TCP connect and bind" : "")
            : "Landlock refuses every TCP connect and bind of a run (UDP is not covered "
              "without the seccomp filter)";
    const std::string asked = w.network_fallback.empty()
                                  ? "SKILL_MCP_NETWORK=off: "
                                  : "SKILL_MCP_NETWORK=declared falls back to off, because " +
                                        w.network_fallback + ": ";
    return Make("network", held, true,
                held ? asked + how
                     : asked + "neither the seccomp filter nor Landlock ABI 4 is there to hold "
                               "it: no script runs",
                "turn the seccomp filter on (SKILL_MCP_SECCOMP=on)");
  }
  return Make("network", false, demanded,
              "SKILL_MCP_NETWORK=on: runs use the host's network as it is, every host and port",
              "unset SKILL_MCP_NETWORK (declared: each run reaches only what its skill declares) "
              "or set it to off");
}

}  // namespace

std::vector<Layer> ComputeLayers(const IsolationFacts& f) {
  std::vector<Layer> out;
  const PrivilegeState& p = f.privileges;

  // Re-read now rather than trusting the boot result: a uid change resets the flag.
  bool dumpable_off = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
  out.push_back(Make(
      "broker-non-dumpable", dumpable_off, true,
      dumpable_off ? "PR_GET_DUMPABLE is 0: same-uid processes cannot read "
                     "/proc/<pid>/mem or environ, nor ptrace the broker"
                   : "the broker is dumpable" +
                         (f.process.detail.empty() ? std::string() : " (" + f.process.detail + ")"),
      "report this: prctl(PR_SET_DUMPABLE, 0) should never fail"));

  rlimit core{};
  bool core_off = getrlimit(RLIMIT_CORE, &core) == 0 && core.rlim_cur == 0 && core.rlim_max == 0;
  out.push_back(Make("core-dumps-off", core_off, true,
                     core_off ? "RLIMIT_CORE is 0" : "RLIMIT_CORE is not 0",
                     "report this: setrlimit(RLIMIT_CORE, 0) should never fail"));

  bool env_demanded = f.hosted && !f.allow_unscrubbed;
  std::string env_reason =
      !f.scrub_attempted ? "the environ block was not scrubbed" : f.scrub.detail;
  if (!f.scrub.ok && f.hosted && f.allow_unscrubbed)
    env_reason += " (hosted; MCP_SKILL_ALLOW_UNSCRUBBED=1 lets scripts run anyway)";
  else if (!f.scrub.ok && f.hosted)
    env_reason += " (hosted: no script runs)";
  out.push_back(Make("environ-wiped", f.scrub_attempted && f.scrub.ok, env_demanded, env_reason,
                     "make /proc/self/mem writable for the broker (no read-only /proc overlay), "
                     "or set MCP_SKILL_ALLOW_UNSCRUBBED=1 to accept the risk"));

  out.push_back(Make("secrets-guarded", true, true,
                     "variable values live in libsodium guarded pages, no-access outside use "
                     "and wiped on release",
                     ""));

  std::string uid_reason;
  if (p.worker_switch) {
    uid_reason = "workers switch to " + p.run_as.how +
                 (f.worker.run_uids.empty() ? ""
                                            : " (its group; each run's uid is its own, see "
                                              "run-identity)");
  } else {
    uid_reason = p.detail.empty() ? "workers run under the broker's uid" : p.detail;
  }
  out.push_back(Make("uid-switch", p.worker_switch, p.switch_demanded, uid_reason,
                     "start the broker as root or with AmbientCapabilities=CAP_SETUID CAP_SETGID "
                     "CAP_KILL, and create the run-as user (SKILL_MCP_RUN_AS)"));

  const WorkerLayerFacts& wf = f.worker;
  const bool own_uid = !wf.run_uids.empty();
  out.push_back(
      Make("run-identity", own_uid, wf.run_uids_demanded,
           own_uid ? "each run gets a uid of its own from " + wf.run_uids +
                         ", keeping the run-as "
                         "group " +
                         std::to_string(wf.run_gid) +
                         ": runs of other connections cannot "
                         "read, trace or signal each other, and RLIMIT_NPROC bounds one run; the "
                         "pool is shared only by brokers using " +
                         wf.run_uids_lock_dir +
                         ": give "
                         "every broker of this host the same SKILL_MCP_STATE_DIR or disjoint "
                         "SKILL_MCP_RUN_UIDS" +
                         (wf.run_uids_warning.empty() ? "" : "; warning: " + wf.run_uids_warning)
                   : wf.run_uids_off_reason,
           "start the broker as root or with CAP_SETUID/CAP_SETGID, give it a host-wide state "
           "directory (SKILL_MCP_STATE_DIR, the unit's StateDirectory=, or, started as root, "
           "/var/lib/skill-mcp owned by its service user with mode 0700), and leave "
           "SKILL_MCP_RUN_UIDS unset or name a range mapped here"));

  std::string caps_reason;
  if (p.started_as_root && p.broker_switched)
    caps_reason =
        "the broker left root for " + p.service.how + "; capabilities now: " + p.caps_text;
  else if (p.started_as_root)
    caps_reason = "the broker is still root: " + p.detail;
  else
    caps_reason =
        "the broker runs as uid " + std::to_string(p.uid) + "; capabilities: " + p.caps_text;
  bool caps_on = p.caps_reduced && (!p.started_as_root || p.broker_switched);
  out.push_back(Make("capabilities-dropped", caps_on, p.switch_demanded, caps_reason,
                     "create the service user (SKILL_MCP_USER) or let the fallback uid be used"));

  std::string nnp = StatusField("NoNewPrivs");
  out.push_back(Make("no-new-privs", !nnp.empty(), false,
                     !nnp.empty()
                         ? "each worker sets no_new_privs before exec (a failure stops the run)"
                         : "this kernel does not report NoNewPrivs",
                     "a kernel with PR_SET_NO_NEW_PRIVS (3.5 or later)"));

  std::string sec = StatusField("Seccomp");
  bool seccomp_on = f.worker.seccomp_configured && !sec.empty();
  out.push_back(Make("seccomp", seccomp_on, false,
                     seccomp_on ? "each worker installs the seccomp filter last before exec"
                     : !f.worker.seccomp_configured
                         ? "the seccomp filter is turned off in the configuration"
                         : "this kernel has no seccomp",
                     "a kernel with CONFIG_SECCOMP_FILTER, and the filter enabled"));

  out.push_back(Make("prlimits", f.worker.limits_configured, false,
                     f.worker.limits_configured ? "each worker applies " + f.worker.limits_text
                                                : "no resource limits are configured",
                     "set the SKILL_MCP_LIMIT_* options to positive values"));

  // The whole-run memory bound (broker/run/run_memory.h, docs/isolation.md).
  const bool mem_on = f.worker.run_memory_mb > 0;
  out.push_back(
      Make("run-memory", mem_on, f.worker.run_memory_demanded,
           mem_on ? "sampled every " + std::to_string(f.worker.run_memory_sample_ms) +
                        " ms (or 10 x a sample's cost when longer), limit " +
                        std::to_string(f.worker.run_memory_mb) +
                        " MiB per run; a burst faster than the sampling is bounded by " +
                        f.worker.run_memory_burst +
                        "; a run whose processes hold more in all (RssAnon + RssShmem) is killed"
                  : f.worker.run_memory_off_reason,
           "unset SKILL_MCP_LIMIT_RUN_MEMORY_MB (the default is twice the data limit) or set it to "
           "a limit in MiB, on a /proc without hidepid (or give the broker CAP_SYS_PTRACE) and "
           "with per-thread children files (a kernel with CONFIG_PROC_CHILDREN)"));

  const WorkerLayerFacts& w = f.worker;
  const bool ns_on = w.namespaces_configured && w.namespaces_problem.empty();
  out.push_back(Make("run-namespaces", ns_on, w.namespaces_demanded,
                     ns_on ? "each run gets its own user, mount, pid and IPC namespace: a "
                             "private /tmp, the other skills do not exist, it sees and signals "
                             "only its own processes, its System V IPC dies with it, and its "
                             "processes die when its first one exits"
                     : !w.namespaces_problem.empty() ? w.namespaces_problem
                     : !w.namespaces_off_reason.empty()
                         ? w.namespaces_off_reason
                         : "runs share the host's /tmp, pids and System V IPC and can read the "
                           "other skills' bundles (SKILL_MCP_NAMESPACES=off)",
                     "set SKILL_MCP_NAMESPACES=auto (the default) or on where unprivileged user "
                     "namespaces are allowed"));
  const bool proc_on = ns_on && w.fresh_proc;
  out.push_back(Make("fresh-proc", proc_on, false,
                     proc_on  ? "each namespaced run mounts its own /proc: it lists the run's "
                                "processes only"
                     : !ns_on ? "no pid namespace for runs (see run-namespaces)"
                              : w.fresh_proc_problem,
                     "a runtime that does not mask /proc (podman: --security-opt "
                     "unmask=/proc/*, or systemd without ProtectProc=)"));
  // The worker sets it in every run, all-fatal (worker/cell.h): on wherever runs are.
  out.push_back(Make(
      "parent-death", w.runs_possible, false,
      w.runs_possible
          ? std::string("every process of a run dies with its parent: a killed "
                        "broker's run dies ") +
                (ns_on ? "with its pid namespace" : "by its process group (the worker kills it)")
          : "no run can start here (see runs)",
      "make runs possible (see runs)"));

  const bool landlock_on = w.landlock_abi > 0;
  std::string landlock_reason =
      landlock_on ? "Landlock ABI " + std::to_string(w.landlock_abi) +
                        ": each run reads and executes only the system and node, reads its own "
                        "skill and the node_modules beside its own skills root, writes only its "
                        "scratch TMPDIR and MCP_DATA_DIR" +
                        (w.landlock_abi >= 6 ? "; its signals and abstract unix sockets stay "
                                               "within the run"
                                             : "; signals are not scoped (ABI 6 needed)")
                  : w.landlock_problem;
  out.push_back(Make("landlock", landlock_on, w.landlock_demanded, landlock_reason,
                     "a kernel with Landlock enabled (5.13 or later, landlock in the lsm= boot "
                     "parameter), and SKILL_MCP_LANDLOCK unset or auto"));

  // The doors out of the cell that Landlock cannot shut (pathname and abstract sockets,
  // metadata, host IPC): the run's view closes them where it is a closed view, the seccomp
  // filter's no-view groups where it is not (seccomp DoorFenceFor, the same decision the
  // run's description takes); with neither they stay open, and the boot line says so.
  const seccomp::DoorFence fence =
      seccomp::DoorFenceFor(ns_on, ns_on && w.fresh_proc, w.landlock_abi);
  const bool view_closed = ns_on && fence != seccomp::DoorFence::kNoView;
  const bool fence_all = seccomp_on && fence == seccomp::DoorFence::kNoView;
  const bool fence_unix = seccomp_on && fence != seccomp::DoorFence::kNone;
  std::string places;
  for (const std::string& p : w.private_places) places += (places.empty() ? "" : ", ") + p;
  out.push_back(Make(
      "private-view", view_closed, false,
      view_closed
          ? "each run's view hides " + (places.empty() ? std::string("no private place") : places) +
                " behind empty read-only covers (only its own skill, scratch and data "
                "directories, node's prefix and the resolver's files are bound back) and is "
                "read-only but for its own /tmp, /dev/shm, scratch directory and MCP_DATA_DIR"
      : ns_on ? "the runs' /proc is the host's and Landlock is off, so /proc/<pid>/root of "
                "another process of the run's uid leads around the view; the seccomp filter "
                "closes its doors instead (see unix-sockets-fenced)"
              : "no mount namespace for runs (see run-namespaces): a run sees every place its "
                "uid may read, homes and /run included",
      "set SKILL_MCP_NAMESPACES=auto (the default) or on where unprivileged user namespaces "
      "are allowed, with a fresh /proc or Landlock"));
  const std::string no_fence =
      !seccomp_on ? "the seccomp filter is off" : "the seccomp filter does not fence them here";
  out.push_back(Make(
      "unix-sockets-fenced", fence == seccomp::DoorFence::kNone ? view_closed : fence_unix, false,
      fence == seccomp::DoorFence::kNone && view_closed
          ? "a run connects only to sockets it made itself: its view hides every other "
            "(private-view) and Landlock ABI 6 scopes abstract ones to the run"
      : fence_unix
          ? "runs cannot create unix sockets (seccomp refuses socket(AF_UNIX) and datagram "
            "socketpairs with EPERM; a stream socketpair, node's own pipes, still works): " +
                std::string(fence == seccomp::DoorFence::kNoView
                                ? "no closed view hides the user's sockets"
                                : "Landlock does not scope abstract sockets here (ABI 6 needed)")
          : "warning: runs can reach the user's sockets (session bus, agents, daemons): no view "
            "hides them all and " +
                no_fence,
      "turn namespaces and Landlock on, or the seccomp filter (SKILL_MCP_NAMESPACES, "
      "SKILL_MCP_LANDLOCK, SKILL_MCP_SECCOMP)"));
  out.push_back(
      Make("metadata-fenced", view_closed || fence_all, false,
           view_closed
               ? "chmod, chown, utimes, xattrs, mknod and rename fail with EROFS outside the run's "
                 "own /tmp, /dev/shm, scratch directory and MCP_DATA_DIR (private-view)"
           : fence_all
               ? "runs cannot change any file's mode, owner, times, inode flags or extended "
                 "attributes (seccomp refuses them with EPERM, their own files included)"
               : "runs can change the mode, times and extended attributes of files their uid may "
                 "write: no view is read-only and " +
                     no_fence,
           "turn namespaces or the seccomp filter on (SKILL_MCP_NAMESPACES, SKILL_MCP_SECCOMP)"));
  out.push_back(
      Make("host-ipc-fenced", ns_on || fence_all, false,
           ns_on       ? "each run's System V IPC and POSIX message queues live in its own IPC "
                         "namespace and die with it"
           : fence_all ? "runs without namespaces cannot use System V IPC or POSIX message queues "
                         "(seccomp refuses them with EPERM)"
                       : "runs share the host's System V IPC and POSIX message queues: " + no_fence,
           "turn namespaces or the seccomp filter on (SKILL_MCP_NAMESPACES, SKILL_MCP_SECCOMP)"));

  out.push_back(NetworkLayer(w));

  const bool spent_ok = f.spent_dir_problem.empty();
  out.push_back(Make(
      "spent-tokens-host-wide", spent_ok, false,
      !f.shared_tokens ? "no MCP_CONFIRM_SECRET: tokens are signed with this process's own key "
                         "and spent once within it"
      : spent_ok       ? "a token signed with MCP_CONFIRM_SECRET is spent once on the whole host: "
                         "the record in " +
                       f.spent_dir_path + " is shared by every broker"
                 : "warning: tokens signed with MCP_CONFIRM_SECRET are not spent host-wide: " +
                       f.spent_dir_problem,
      "set SKILL_MCP_STATE_DIR to a directory every broker of the host shares (not in a "
      "private /tmp), owned by the service user"));

  // Never on: per-run cgroups are not built (broker/harden/run_cgroup.h says why); the
  // reason tells the operator what bounds a run and the connection instead.
  const CgroupFacts cg = f.cgroup ? *f.cgroup : ReadOwnCgroupFacts();
  out.push_back(Make("run-cgroup", false, false, RunCgroupReason(cg, own_uid),
                     "nothing to set: skill-mcp builds no per-run cgroups (docs/isolation.md, "
                     "whole-run limits)"));

  out.push_back(
      Make("runs", f.worker.runs_possible, false,
           f.worker.runs_possible
               ? "the worker and the pinned interpreters are open (" + f.worker.interpreters + ")"
               : f.worker.runs_reason,
           "install each interpreter of SKILL_MCP_INTERPRETERS (or set its path: SKILL_MCP_NODE, "
           "SKILL_MCP_PYTHON3) and the worker (or set SKILL_MCP_WORKER)"));
  return out;
}

std::string LayersOneLine(const std::vector<Layer>& layers) {
  std::string on, off;
  for (const Layer& l : layers) {
    if (l.on) {
      on += (on.empty() ? "" : ", ") + l.name;
    } else {
      off += (off.empty() ? "" : ", ") + l.name + " (" + l.reason + ")";
    }
  }
  return "isolation: on [" + on + "]; off [" + off + "]";
}

std::string FormatDoctorReport(const std::vector<Layer>& layers) {
  std::string out = "skill-mcp isolation report\n";
  for (const Layer& l : layers) {
    out += "\n  " + l.name + ": " + (l.on ? "on" : "off");
    if (!l.on && l.demanded) out += "  << required by this configuration";
    out += "\n    " + l.reason + "\n";
    if (!l.on && !l.enable.empty()) out += "    to turn on: " + l.enable + "\n";
  }
  int code = DoctorExitCode(layers);
  out += code == 0 ? "\nall layers this configuration requires are on\n"
                   : "\na layer this configuration requires is off (exit 1)\n";
  return out;
}

int DoctorExitCode(const std::vector<Layer>& layers) {
  for (const Layer& l : layers)
    if (l.demanded && !l.on) return 1;
  return 0;
}

int RunDoctor(const IsolationFacts& facts, FILE* out) {
  std::vector<Layer> layers = ComputeLayers(facts);
  std::string text = FormatDoctorReport(layers);
  fwrite(text.data(), 1, text.size(), out);
  fflush(out);
  return DoctorExitCode(layers);
}

}  // namespace skillmcp
