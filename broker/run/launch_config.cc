#include "broker/run/launch_config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "broker/run/namespace_probe.h"
#include "broker/run/private_places.h"
#include "broker/run/run_identity.h"
#include "broker/run/run_memory.h"
#include "config.h"
#include "seccomp/compile.h"
#include "seccomp/policy.h"
#include "shared/landlock_abi.h"
#include "shared/log.h"
#include "shared/run_limits_default.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

struct LimitOption {
  const char* name;
  uint64_t RunLimits::*field;
  uint64_t unit;
};

constexpr LimitOption kLimitOptions[] = {
    {"SKILL_MCP_LIMIT_NPROC", &RunLimits::nproc, 1},
    {"SKILL_MCP_LIMIT_AS_MB", &RunLimits::address_space, kMiB},
    {"SKILL_MCP_LIMIT_DATA_MB", &RunLimits::data, kMiB},
    {"SKILL_MCP_LIMIT_CPU_SECONDS", &RunLimits::cpu_seconds, 1},
    {"SKILL_MCP_LIMIT_FSIZE_MB", &RunLimits::fsize, kMiB},
    {"SKILL_MCP_LIMIT_NOFILE", &RunLimits::nofile, 1},
};

// SKILL_MCP_LANDLOCK; "" or the boot error.
std::string ResolveLandlock(const EnvStore& env, LaunchConfig& c) {
  std::string mode = env.GetConfig("SKILL_MCP_LANDLOCK").value_or("auto");
  if (mode != "auto" && mode != "on" && mode != "off")
    return "SKILL_MCP_LANDLOCK=\"" + mode + "\" is none of auto, on, off";
  c.landlock_demanded = mode == "on";
  if (mode == "off") {
    c.landlock_problem = "turned off by SKILL_MCP_LANDLOCK=off";
    return "";
  }
  // Probed once, here; every run uses this ABI (a newer kernel at the newest we know).
  const int abi = landlock::ProbeAbi();
  if (abi > 0) {
    c.landlock_abi = std::min<uint32_t>(static_cast<uint32_t>(abi), landlock::kKnownAbi);
  } else if (abi == -ENOSYS) {
    c.landlock_problem = "this kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK)";
  } else if (abi == -EOPNOTSUPP) {
    c.landlock_problem =
        "this kernel has Landlock but did not enable it at boot (add landlock to the lsm= "
        "boot parameter)";
  } else if (abi == -EPERM) {
    c.landlock_problem =
        "a system call filter refuses Landlock to the broker (under systemd, allow "
        "landlock_create_ruleset, landlock_add_rule and landlock_restrict_self in "
        "SystemCallFilter=)";
  } else {
    c.landlock_problem = std::string("the Landlock probe failed (") + std::strerror(-abi) + ")";
  }
  return "";
}

// Why runs are refused for the Landlock options, or "".
std::string LandlockRefusal(const LaunchConfig& c) {
  // why: the operator asked for it; fail closed rather than run without it.
  if (c.landlock_demanded && c.landlock_abi == 0)
    return "SKILL_MCP_LANDLOCK=on, but " + c.landlock_problem;
  return "";
}

std::string MiB(uint64_t bytes) { return std::to_string(bytes / kMiB) + " MiB"; }

// The boot probe (broker/run/namespace_probe.h), first with a fresh /proc, then, where
// only that mount is refused (a runtime that masks parts of /proc), without it.
void ProbeNamespacesNow(LaunchConfig& c) {
  NamespaceProbe first = ProbeRunNamespaces(c, /*fresh_proc=*/true);
  if (!ProbeAgainWithoutFreshProc(first)) return DecideNamespaces(c, first, nullptr);
  NamespaceProbe second = ProbeRunNamespaces(c, /*fresh_proc=*/false);
  DecideNamespaces(c, first, &second);
}

}  // namespace

std::string ResolveRunMemory(const EnvStore& env, std::string_view blindness, LaunchConfig& c) {
  constexpr char kName[] = "SKILL_MCP_LIMIT_RUN_MEMORY_MB";
  std::optional<std::string> text = env.GetConfig(kName);
  c.run_memory_bytes = 0;
  c.run_memory_demanded = false;
  if (text && (*text == "0" || *text == "off")) {
    c.run_memory_off_reason = std::string("turned off by ") + kName + "=" + *text;
    return "";
  }
  if (text) {
    std::optional<uint64_t> v = ParsePositive(*text);
    // why: a mistyped limit must stop the boot, never silently fall back to another value.
    if (!v || *v > UINT64_MAX / kMiB)
      return std::string(kName) + "=\"" + *text +
             "\" is not a positive whole number, 0 or off; set it to a value like 2048, or "
             "unset it for the default (twice SKILL_MCP_LIMIT_DATA_MB)";
    c.run_memory_bytes = *v * kMiB;
    c.run_memory_demanded = true;
  } else {
    // Decision: twice the per-process data limit (2 GiB by default). One process may use
    // its whole data limit and still leave room for the helpers it spawns (an idle node
    // holds about 6 MiB of RssAnon, an ordinary run tens), while a run that forks its way past
    // the per-process bound (7 node processes reach 838 MiB at a 128 MiB data limit) is
    // stopped; an operator who raises DATA_MB raises this with it.
    c.run_memory_bytes = c.limits.data > UINT64_MAX / 2 ? UINT64_MAX : 2 * c.limits.data;
  }
  if (!blindness.empty()) {
    c.run_memory_bytes = 0;
    c.run_memory_off_reason = std::string(blindness);
  }
  return "";
}

std::string RunMemoryRefusal(const LaunchConfig& c) {
  // why: an operator who set the limit relies on it; fail closed rather than run unbounded.
  if (c.run_memory_demanded && c.run_memory_bytes == 0)
    return "SKILL_MCP_LIMIT_RUN_MEMORY_MB is set, but " + c.run_memory_off_reason +
           "; unset it (or set it to off) to run without the whole-run bound";
  return "";
}

std::optional<uint64_t> ParsePositive(std::string_view text) {
  if (text.empty() || text[0] == '0') return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

void CompileSeccompPolicy(LaunchConfig& c) {
  if (!c.seccomp_pending) return;
  c.seccomp_pending = false;
  // why: fail closed; with seccomp configured on, no run starts without the filter.
  int rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf);
  if (rc == 0)
    rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf_unix_fence, seccomp::DoorFence::kUnixSockets);
  if (rc == 0)
    rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf_without_view, seccomp::DoorFence::kNoView);
  if (rc == 0 && c.network_mode == NetworkMode::kDeclared)
    rc = seccomp::CompileMirrorPolicy(&c.seccomp_bpf_mirror);
  // why both sets under declared: the probe may still settle it on off.
  if (rc == 0 && c.network_mode != NetworkMode::kOn) {
    rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf_inet, seccomp::DoorFence::kNone, true);
    if (rc == 0)
      rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf_unix_fence_inet,
                                        seccomp::DoorFence::kUnixSockets, true);
    if (rc == 0)
      rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf_without_view_inet,
                                        seccomp::DoorFence::kNoView, true);
  }
  if (rc < 0)
    c.refusal += std::string(c.refusal.empty() ? "" : "; ") +
                 "the seccomp policy cannot be compiled (" + std::strerror(-rc) +
                 "); runs stay off while SKILL_MCP_SECCOMP is on";
}

LaunchConfigResult ResolveLaunchConfig(const EnvStore& env, const PrivilegeState& privileges,
                                       NamespaceProbeTiming timing) {
  LaunchConfigResult result;
  LaunchConfig c;

  c.limits = kDefaultRunLimits;
  c.private_places = PrivatePlaces(env.GetConfig("HOME").value_or(""),
                                   env.GetConfig("XDG_RUNTIME_DIR").value_or(""));
  for (const LimitOption& o : kLimitOptions) {
    std::optional<std::string> text = env.GetConfig(o.name);
    if (!text) continue;
    std::optional<uint64_t> v = ParsePositive(*text);
    // why: a mistyped limit must stop the boot, never silently fall back to another value.
    if (!v || *v > UINT64_MAX / o.unit) {
      result.error = std::string(o.name) + "=\"" + *text +
                     "\" is not a positive whole number; set it to a value like 256, or unset it "
                     "for the default";
      return result;
    }
    c.limits.*(o.field) = *v * o.unit;
  }
  if (std::string e = ResolveRunMemory(env, OwnRunMemoryBlindness(), c); !e.empty()) {
    result.error = e;
    return result;
  }

  std::optional<std::string> sec = env.GetConfig("SKILL_MCP_SECCOMP");
  if (sec) {
    if (*sec == "on" || *sec == "1") {
      c.seccomp = true;
    } else if (*sec == "off" || *sec == "0") {
      c.seccomp = false;
    } else {
      result.error = "SKILL_MCP_SECCOMP=\"" + *sec + "\" is neither on nor off";
      return result;
    }
  }

  // Decision: auto by default, so every host that allows namespaces gets them (each run
  // in its own cell), and none refuses runs because it does not.
  const std::string ns = env.GetConfig("SKILL_MCP_NAMESPACES").value_or("auto");
  if (ns == "on" || ns == "1") {
    c.namespaces = c.namespaces_demanded = true;
  } else if (ns == "auto") {
    c.namespaces = true;
  } else if (ns == "off" || ns == "0") {
    c.namespaces = false;
  } else {
    result.error = "SKILL_MCP_NAMESPACES=\"" + ns + "\" is neither auto, on nor off";
    return result;
  }

  if (std::string e = ResolveLandlock(env, c); !e.empty()) {
    result.error = e;
    return result;
  }
  if (std::string e = ResolveNetwork(env, SelfDir(), c); !e.empty()) {
    result.error = e;
    return result;
  }
  std::optional<std::string> tmpdir = env.GetConfig("TMPDIR");
  c.scratch_base = tmpdir && !tmpdir->empty() && (*tmpdir)[0] == '/' ? *tmpdir : "/tmp";
  // why: each scratch path goes into the worker's spec, which takes only normalised paths
  // (a TMPDIR of "/tmp/" would refuse every run); one that does not resolve stays as set
  // and making the scratch directory fails with its own error.
  if (std::string real = RealPath(c.scratch_base); !real.empty()) c.scratch_base = real;

  c.switch_ids = privileges.worker_switch;
  if (c.switch_ids) {
    c.uid = privileges.run_as.uid;
    c.gid = privileges.run_as.gid;
    c.run_as = privileges.run_as.how;
  }
  if (std::string e = ResolveRunIdentity(env, privileges, c); !e.empty()) {
    result.error = e;
    return result;
  }

  std::string why_not;
  // The worker: explicit option, else the build tree beside this executable, else the
  // installed libexec copy.
  std::optional<std::string> worker = env.GetConfig("SKILL_MCP_WORKER");
  if (worker) {
    c.worker_path = *worker;
  } else {
    std::string built = SelfDir() + "/../worker/skill-mcp-worker";
    c.worker_path = IsExecutableFile(built)
                        ? RealPath(built)
                        : std::string(SKILL_MCP_LIBEXECDIR) + "/skill-mcp-worker";
  }
  if (c.worker_path.empty() || c.worker_path[0] != '/') {
    why_not = "the worker path \"" + c.worker_path + "\" is not absolute (SKILL_MCP_WORKER)";
  } else if (std::string e = OpenExecutable(c.worker_path, &c.worker); !e.empty()) {
    why_not = "the worker binary cannot be used (" + e +
              "); install skill-mcp-worker or set SKILL_MCP_WORKER";
  }

  // The interpreters: each resolved once, here, to an absolute path without symlinks.
  std::optional<std::string> set = env.GetConfig("SKILL_MCP_INTERPRETERS");
  InterpreterNames names = ParseInterpreterNames(set);
  if (!names.error.empty()) {
    result.error = names.error;
    return result;
  }
  c.interpreters_configured = set.has_value();
  for (const std::string& name : names.names) {
    PinnedInterpreter& pinned = c.interpreters.emplace_back();
    if (std::string e = PinInterpreter(env, name, c.private_places, kDefaultPath, &pinned);
        !e.empty())
      why_not += (why_not.empty() ? "" : "; ") + e;
  }
  if (std::string e = RunMemoryRefusal(c); !e.empty()) why_not += (why_not.empty() ? "" : "; ") + e;
  if (std::string e = LandlockRefusal(c); !e.empty()) why_not += (why_not.empty() ? "" : "; ") + e;
  if (std::string e = RunIdentityRefusal(c); !e.empty())
    why_not += (why_not.empty() ? "" : "; ") + e;
  c.seccomp_pending = c.seccomp;
  if (timing == NamespaceProbeTiming::kNow) {
    c.refusal = why_not;
    CompileSeccompPolicy(c);
    why_not = c.refusal;
  }
  if (c.namespaces && !why_not.empty()) {
    const std::string not_tried = "not tried: no script can run here anyway (" + why_not + ")";
    if (c.namespaces_demanded) {
      c.namespaces_problem = not_tried;
    } else {
      c.namespaces = false;
      c.namespaces_off_reason = not_tried;
    }
  }
  SettleNetwork(c);
  if (std::string e = NetworkRefusal(c); !e.empty()) why_not += (why_not.empty() ? "" : "; ") + e;
  c.refusal = why_not;
  if (c.namespaces && why_not.empty()) {
    // why: until the probe has decided, no run starts (RunSupervisor::StartCommitted refuses).
    if (timing == NamespaceProbeTiming::kDeferred) {
      c.namespaces_pending = true;
    } else {
      ProbeNamespacesNow(c);
    }
  }
  result.config = std::move(c);
  return result;
}

const PinnedInterpreter* LaunchConfig::Interpreter(std::string_view name) const {
  for (const PinnedInterpreter& p : interpreters)
    if (p.name == name) return &p;
  return nullptr;
}

bool LaunchConfig::ready() const {
  if (!refusal.empty() || !worker.valid() || interpreters.empty()) return false;
  for (const PinnedInterpreter& p : interpreters)
    if (!p.fd.valid()) return false;
  return true;
}

WorkerLayerFacts LayerFacts(const LaunchConfig& c) {
  WorkerLayerFacts f;
  f.seccomp_configured = c.seccomp;
  f.namespaces_configured = c.namespaces;
  f.namespaces_demanded = c.namespaces_demanded;
  f.namespaces_problem = c.namespaces_problem;
  f.namespaces_off_reason = c.namespaces_off_reason;
  f.fresh_proc = c.fresh_proc;
  f.private_places = c.private_places;
  f.fresh_proc_problem = c.fresh_proc_problem;
  const RunLimits& l = c.limits;
  f.limits_configured =
      l.nproc || l.address_space || l.data || l.cpu_seconds || l.fsize || l.nofile;
  f.limits_text = "nproc " + std::to_string(l.nproc) + ", as " + MiB(l.address_space) + ", data " +
                  MiB(l.data) + ", cpu " + std::to_string(l.cpu_seconds) + " s, fsize " +
                  MiB(l.fsize) + ", nofile " + std::to_string(l.nofile) + ", core 0";
  f.run_memory_mb = c.run_memory_bytes / kMiB;
  f.run_memory_demanded = c.run_memory_demanded;
  f.run_memory_sample_ms = kRunMemorySampleMs;
  f.run_memory_burst = "nproc x data (" + std::to_string(l.nproc) + " x " + MiB(l.data) + ")";
  f.run_memory_off_reason = c.run_memory_off_reason;
  f.landlock_abi = c.landlock_abi;
  f.landlock_demanded = c.landlock_demanded;
  f.landlock_problem = c.landlock_problem;
  f.network_mode = NetworkModeName(c.network_mode);
  f.network_off = c.network_off;
  f.egress_declared = c.egress_declared;
  f.network_fallback = c.network_fallback;
  f.network_seccomp = c.seccomp;
  f.egress_local = c.egress.allow_local;
  f.egress_patterns = c.egress.patterns.has_value();
  if (c.run_uids) {
    const RunUidRange r = c.run_uids->range();
    const uint64_t held = c.run_uids->CountHeld();
    f.run_uids = std::to_string(r.first) + "-" + std::to_string(r.last) + " (" +
                 std::to_string(r.size()) + " uids, " + std::to_string(r.size() - held) +
                 " free now; locks in " + c.run_uids->path() + ")";
    f.run_uids_lock_dir = c.run_uids->path();
  }
  f.run_uids_demanded = c.run_uids_demanded;
  f.run_uids_off_reason = c.run_uids_off_reason;
  f.run_uids_warning = c.run_uids_warning;
  f.run_gid = c.gid;
  f.runs_possible = c.ready();
  f.runs_reason = c.refusal;
  f.interpreters = DescribeInterpreters(c.interpreters);
  return f;
}

}  // namespace skillmcp
