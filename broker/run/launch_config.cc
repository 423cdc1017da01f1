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
#include <set>

#include "broker/run/namespace_probe.h"
#include "config.h"
#include "seccomp/compile.h"
#include "seccomp/policy.h"
#include "shared/run_limits_default.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Opens an executable by absolute path and checks the open descriptor, so what is
// checked is what runs. Returns "" or why not.
std::string OpenExecutable(const std::string& path, UniqueFd* out) {
  // why: O_CLOEXEC so no other child ever inherits it; the worker gets it by dup2 only.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return path + ": " + std::strerror(errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return path + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
  if ((st.st_mode & 0111) == 0) return path + " is not executable";
  *out = std::move(fd);
  return "";
}

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

std::string MiB(uint64_t bytes) { return std::to_string(bytes / kMiB) + " MiB"; }

// The boot probe (broker/run/namespace_probe.h), first with a fresh /proc, then, where
// only that mount is refused (a runtime that masks parts of /proc), without it.
void ProbeNamespaces(LaunchConfig& c, std::string& why_not) {
  NamespaceProbe probe = ProbeRunNamespaces(c, /*fresh_proc=*/true);
  if (probe.err != 0 && probe.step == WorkerStep::kMountProc) {
    c.fresh_proc_problem = std::string("the runtime refuses a fresh /proc in the run's pid "
                                       "namespace (") + std::strerror(probe.err) +
                           "); runs see the host's /proc, but signal only their own processes";
    probe = ProbeRunNamespaces(c, /*fresh_proc=*/false);
  } else if (probe.err == 0) {
    c.fresh_proc = true;
  }
  if (probe.err == 0) return;
  c.fresh_proc = false;
  const std::string why = std::string(c.switch_ids ? "the run-as user" : "this user") +
                          " cannot create its user, mount, pid and IPC namespaces here (" +
                          (probe.step ? std::string(DescribeWorkerStep(*probe.step)) + ": " : "") +
                          std::strerror(probe.err) + ")";
  if (!c.namespaces_demanded) {
    // why: auto never costs a run; doctor and the boot banner say what is missing.
    c.namespaces = false;
    c.namespaces_off_reason = why + "; SKILL_MCP_NAMESPACES=auto runs without them";
    return;
  }
  // why: the view is demanded, so a host that cannot build it runs nothing (fail closed)
  // and says so at boot rather than at every run.
  c.namespaces_problem = "SKILL_MCP_NAMESPACES=on, but " + why +
                         "; allow unprivileged user namespaces and mount in them "
                         "(under systemd: RestrictNamespaces=user mnt pid ipc) or set "
                         "SKILL_MCP_NAMESPACES=off";
  why_not = c.namespaces_problem;
}

}  // namespace

std::optional<uint64_t> ParsePositive(std::string_view text) {
  if (text.empty() || text[0] == '0') return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string SearchPath(std::string_view path_value, std::string_view name) {
  size_t at = 0;
  while (at <= path_value.size()) {
    size_t colon = path_value.find(':', at);
    if (colon == std::string_view::npos) colon = path_value.size();
    std::string dir(path_value.substr(at, colon - at));
    at = colon + 1;
    // why: an empty or relative entry means "the cwd", which nobody pinned.
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = dir + "/" + std::string(name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

LaunchConfigResult ResolveLaunchConfig(const EnvStore& env, const PrivilegeState& privileges) {
  LaunchConfigResult result;
  LaunchConfig c;

  c.limits = kDefaultRunLimits;
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

  // Decision: auto by default, so every host that allows namespaces gets them
  // (issue 12's cell), and none refuses runs because it does not.
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

  c.switch_ids = privileges.worker_switch;
  if (c.switch_ids) {
    c.uid = privileges.run_as.uid;
    c.gid = privileges.run_as.gid;
    c.run_as = privileges.run_as.how;
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

  // The pinned node: resolved once, here, to an absolute path without symlinks.
  std::optional<std::string> node = env.GetConfig("SKILL_MCP_NODE");
  std::string node_path;
  if (node) {
    node_path = *node;
  } else {
    node_path = SearchPath(env.GetConfig("PATH").value_or(kDefaultPath), "node");
  }
  std::string node_why;
  if (node_path.empty()) {
    node_why = "no node was found on the broker's PATH; install nodejs or set SKILL_MCP_NODE";
  } else if (node_path[0] != '/') {
    node_why = "SKILL_MCP_NODE=\"" + node_path + "\" is not an absolute path";
  } else {
    c.node_path = RealPath(node_path);
    if (c.node_path.empty()) {
      node_why = "node at " + node_path + " cannot be resolved: " + std::strerror(errno);
    } else if (std::string e = OpenExecutable(c.node_path, &c.node); !e.empty()) {
      node_why = "node cannot be used (" + e + ")";
    }
  }
  if (!node_why.empty()) why_not += (why_not.empty() ? "" : "; ") + node_why;
  if (c.seccomp) {
    // why: fail closed; with seccomp configured on, no run starts without the filter.
    if (int rc = seccomp::CompileWorkerPolicy(&c.seccomp_bpf); rc < 0)
      why_not += std::string(why_not.empty() ? "" : "; ") +
                 "the seccomp policy cannot be compiled (" + std::strerror(-rc) +
                 "); runs stay off while SKILL_MCP_SECCOMP is on";
  }
  if (c.namespaces && !why_not.empty()) {
    const std::string not_tried = "not tried: no script can run here anyway (" + why_not + ")";
    if (c.namespaces_demanded) {
      c.namespaces_problem = not_tried;
    } else {
      c.namespaces = false;
      c.namespaces_off_reason = not_tried;
    }
  } else if (c.namespaces) {
    ProbeNamespaces(c, why_not);
  }
  c.refusal = why_not;
  result.config = std::move(c);
  return result;
}

std::vector<std::string> HiddenRoots(const std::vector<std::string>& roots,
                                     const std::vector<std::string>& skill_dirs) {
  std::set<std::string> all;
  for (const std::string& r : roots) {
    std::string real = RealPath(r);
    if (!real.empty()) all.insert(real);
  }
  for (const std::string& d : skill_dirs) {
    size_t slash = d.rfind('/');
    if (slash != std::string::npos && slash > 0) all.insert(d.substr(0, slash));
  }
  all.erase("/");
  std::vector<std::string> out(all.begin(), all.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  return out;
}

void SetHiddenRoots(LaunchConfig& c, const std::vector<std::string>& roots,
                    const std::vector<std::string>& skill_dirs) {
  c.hidden_roots = HiddenRoots(roots, skill_dirs);
  // why: a view that cannot hide every skills directory is not built at all (fail closed).
  if (c.namespaces && c.hidden_roots.size() > kRunSpecMaxHiddenRoots &&
      c.namespaces_problem.empty()) {
    const std::string why = "the skills live in " + std::to_string(c.hidden_roots.size()) +
                            " directories (at most " + std::to_string(kRunSpecMaxHiddenRoots) +
                            " can be hidden from a run)";
    if (!c.namespaces_demanded) {
      c.namespaces = false;  // auto: runs go on without the view, and doctor says why
      c.fresh_proc = false;
      c.namespaces_off_reason = why;
      return;
    }
    c.namespaces_problem = "SKILL_MCP_NAMESPACES=on, but " + why;
    if (c.refusal.empty()) c.refusal = c.namespaces_problem;
  }
}

WorkerLayerFacts LayerFacts(const LaunchConfig& c) {
  WorkerLayerFacts f;
  f.seccomp_configured = c.seccomp;
  f.namespaces_configured = c.namespaces;
  f.namespaces_demanded = c.namespaces_demanded;
  f.namespaces_problem = c.namespaces_problem;
  f.namespaces_off_reason = c.namespaces_off_reason;
  f.fresh_proc = c.fresh_proc;
  f.fresh_proc_problem = c.fresh_proc_problem;
  const RunLimits& l = c.limits;
  f.limits_configured =
      l.nproc || l.address_space || l.data || l.cpu_seconds || l.fsize || l.nofile;
  f.limits_text = "nproc " + std::to_string(l.nproc) + ", as " + MiB(l.address_space) + ", data " +
                  MiB(l.data) + ", cpu " + std::to_string(l.cpu_seconds) + " s, fsize " +
                  MiB(l.fsize) + ", nofile " + std::to_string(l.nofile) + ", core 0";
  f.runs_possible = c.ready();
  f.runs_reason = c.refusal;
  return f;
}

}  // namespace skillmcp
