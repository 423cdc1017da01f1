// The run's view in a LaunchConfig (declared in launch_config.h): whether runs get their
// namespaces, decided from the boot probe, and what a namespaced run must not see,
// from the catalogue scan.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/run/launch_config.h"
#include "broker/run/module_dirs.h"
#include "broker/run/namespace_probe.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

// After SetHiddenRoots: a view that cannot hide every skills directory is not built.
void LimitHiddenRoots(LaunchConfig& c) {
  // why: a view that cannot hide every skills directory is not built at all (fail closed).
  if (c.namespaces && c.hidden_roots.size() > kRunSpecMaxHiddenRoots &&
      c.namespaces_problem.empty()) {
    const std::string why = "the skills and the private places are " +
                            std::to_string(c.hidden_roots.size()) + " directories (at most " +
                            std::to_string(kRunSpecMaxHiddenRoots) + " can be hidden from a run)";
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

// The run's own network is the last step a probe tries, once every namespace has held:
// its failure settles the declared mode on off (SettleNetwork) and says nothing against
// the namespaces. Sets network_problem from the last probe and returns that probe as the
// namespaces read it, the network step's failure taken out.
NamespaceProbe SettleProbedNetwork(LaunchConfig& c, NamespaceProbe last) {
  c.network_problem.clear();
  if (last.err == 0 || !last.step || *last.step != WorkerStep::kOwnNetwork) return last;
  c.network_problem =
      std::string("the run-as user cannot give a run a network namespace of its own here (") +
      std::string(DescribeWorkerStep(*last.step)) + ": " + std::strerror(last.err) +
      "; under systemd, RestrictNamespaces= needs net and RestrictAddressFamilies= AF_INET "
      "and AF_INET6)";
  last.err = 0;
  last.step.reset();
  return last;
}

}  // namespace

bool ProbeAgainWithoutFreshProc(const NamespaceProbe& first) {
  return first.err != 0 && first.step == WorkerStep::kMountProc;
}

void DecideNamespaces(LaunchConfig& c, const NamespaceProbe& first, const NamespaceProbe* second) {
  c.namespaces_pending = false;
  // The network from the last probe first; the namespaces then from what it leaves.
  const NamespaceProbe probe = SettleProbedNetwork(c, second != nullptr ? *second : first);
  if (second != nullptr) {
    c.fresh_proc_problem = std::string(
                               "the runtime refuses a fresh /proc in the run's pid "
                               "namespace (") +
                           std::strerror(first.err) +
                           "); runs see the host's /proc, but signal only their own processes";
  } else if (probe.err == 0) {
    c.fresh_proc = true;
  }
  if (ProbeUndecided(probe)) {
    // why: a probe that was killed, stopped or garbled says nothing about the host, and
    // may be an attacker's doing (a process of the run-as uid can signal it); taking it
    // as "no namespaces" would turn auto off, so runs are refused instead.
    c.namespaces = false;
    c.fresh_proc = false;
    c.namespaces_problem = std::string("the namespace probe did not finish (") +
                           std::strerror(probe.err) +
                           ": killed, stopped or unreadable); runs are refused rather than "
                           "run without namespaces that may be available; restart the server";
    if (c.refusal.empty()) c.refusal = c.namespaces_problem;
  } else if (probe.err != 0) {
    c.fresh_proc = false;
    const std::string why =
        std::string(c.switch_ids ? "the run-as user" : "this user") +
        " cannot create its user, mount, pid and IPC namespaces here (" +
        (probe.step ? std::string(DescribeWorkerStep(*probe.step)) + ": " : "") +
        std::strerror(probe.err) + ")";
    if (!c.namespaces_demanded) {
      // why: auto never costs a run; doctor and the boot banner say what is missing.
      c.namespaces = false;
      c.namespaces_off_reason = why + "; SKILL_MCP_NAMESPACES=auto runs without them";
    } else {
      // why: the view is demanded, so a host that cannot build it runs nothing (fail
      // closed) and says so at boot rather than at every run.
      c.namespaces_problem = "SKILL_MCP_NAMESPACES=on, but " + why +
                             "; allow unprivileged user namespaces and mount in them "
                             "(under systemd: RestrictNamespaces=user mnt pid ipc) or set "
                             "SKILL_MCP_NAMESPACES=off";
      if (c.refusal.empty()) c.refusal = c.namespaces_problem;
    }
  }
  // Deferred probe: SetHiddenRoots has already filled the lists and left this to here.
  LimitHiddenRoots(c);
  SettleNetwork(c);
  if (std::string e = NetworkRefusal(c); !e.empty() && c.refusal.empty()) c.refusal = e;
}

std::vector<std::string> HiddenRoots(const std::vector<std::string>& roots,
                                     const std::vector<std::string>& skill_dirs,
                                     const std::vector<std::string>& places) {
  std::set<std::string> all(places.begin(), places.end());
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
  c.hidden_roots = HiddenRoots(roots, skill_dirs, c.private_places);
  c.hidden_roots_pending = false;
  std::vector<std::string> real_roots;
  for (const std::string& r : roots)
    if (std::string real = RealPath(r); !real.empty()) real_roots.push_back(real);
  c.module_roots = ModuleDirsByRoot(real_roots, skill_dirs);
  for (RootModuleDirs& m : c.module_roots) {
    struct stat st {};
    // why: a root that cannot be stat'ed lends its owner to nothing (root still counts).
    m.root_owner = stat(m.root.c_str(), &st) == 0 ? st.st_uid : 0;
  }
  // A deferred probe applies the limit once it has decided (DecideNamespaces).
  if (!c.namespaces_pending) LimitHiddenRoots(c);
}

}  // namespace skillmcp
