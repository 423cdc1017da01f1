#include "broker/run/run_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include "broker/harden/state_dir.h"
#include "broker/run/run_fs_ids.h"
#include "broker/run/uid_probe.h"
#include "shared/log.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

std::string RangeText(RunUidRange r) {
  return std::to_string(r.first) + "-" + std::to_string(r.last);
}

// Whether a run's ids (its uid, the run-as group, no supplementary group) may write and
// search `dir`, asked of the kernel with the filesystem ids set to them (ACLs included).
bool WritableBy(const std::string& dir, uid_t uid, gid_t gid) {
  const RunFsIds ids(true, uid, gid);
  return ids.ok() && faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0;
}

void Append(std::string& s, const std::string& more) {
  if (!s.empty()) s += "; ";
  s += more;
}

}  // namespace

std::string ResolveRunIdentity(const EnvStore& env, const PrivilegeState& p, LaunchConfig& c) {
  return ResolveRunIdentity(env, p, c, HostIdFiles{});
}

std::string ResolveRunIdentity(const EnvStore& env, const PrivilegeState& p, LaunchConfig& c,
                               const HostIdFiles& files) {
  const std::optional<std::string> option = env.GetConfig("SKILL_MCP_RUN_UIDS");
  if (option == "off") {
    c.run_uids_off_reason = "turned off by SKILL_MCP_RUN_UIDS=off: every run shares " +
                            (c.switch_ids ? c.run_as : std::string("the broker's uid"));
    return "";
  }
  RunUidRange range = kDefaultRunUidRange;
  if (option) {
    std::string why;
    std::optional<RunUidRange> parsed = ParseRunUidRange(*option, &why);
    // why: a mistyped range stops the boot, never a silent fallback to a shared uid.
    if (!parsed) return "SKILL_MCP_RUN_UIDS=" + why;
    range = *parsed;
    c.run_uids_demanded = true;
  }
  if (!c.switch_ids) {
    c.run_uids_off_reason = "the broker cannot switch uids, so every run shares its uid" +
                            (p.detail.empty() ? std::string() : " (" + p.detail + ")");
    return "";
  }
  // why: a run under the broker's or the fixed run-as uid would share it with others.
  for (uint32_t taken : {static_cast<uint32_t>(p.uid), c.uid, static_cast<uint32_t>(getuid())}) {
    if (range.contains(taken))
      return "SKILL_MCP_RUN_UIDS=" + RangeText(range) + " holds uid " + std::to_string(taken) +
             ", which the broker or the run-as identity uses; choose a range apart";
  }
  // why: the probe does not see the range's uids in user namespaces other uids created
  // (containers, subordinate ids, mapped host users): only a range no one else uses is
  // safe. A named range then runs nothing; the default turns identity off.
  if (std::string clash = RangeClashWithHostIds(range, files); !clash.empty()) {
    const std::string blind =
        " (the uid probe cannot see processes of these ids in user namespaces other uids "
        "created)";
    c.run_uids_off_reason =
        c.run_uids_demanded
            ? "the range " + clash + blind +
                  "; name a range apart from the host's users, groups and subordinate ids"
            : "the default range " + clash + blind + ", so every run shares " + c.run_as +
                  "; set SKILL_MCP_RUN_UIDS to a range apart from them";
    return "";
  }
  std::string uid_map;
  int err = 0;
  if (!ReadSmallFile("/proc/self/uid_map", &uid_map, &err) || !RangeMapped(uid_map, range)) {
    c.run_uids_off_reason = "the uids " + RangeText(range) +
                            " are not mapped in this user namespace (/proc/self/uid_map), so "
                            "every run shares " +
                            c.run_as +
                            "; map them (a container's --uidmap) or set SKILL_MCP_RUN_UIDS to "
                            "a mapped range";
    return "";
  }
  OpenedStateDir dir = OpenStateDirFromEnv([&env](std::string_view n) { return env.GetConfig(n); },
                                           {"run-uids"}, p.host_state);
  if (!dir.fd) {
    c.run_uids_off_reason = "the uid locks need the host-wide state directory (" + dir.error +
                            "), so every run shares " + c.run_as;
    return "";
  }
  if (std::string priv = PrivateTmpProblemHere(dir.path); !priv.empty())
    Append(c.run_uids_warning, "the locks are not host-wide: " + priv);
  if (std::optional<std::string> data = env.GetConfig("MCP_DATA_DIR");
      data && !data->empty() && (*data)[0] == '/' && !WritableBy(*data, range.first, c.gid)) {
    Append(c.run_uids_warning, "MCP_DATA_DIR (" + *data +
                                   ") cannot be written by a run: give the run-as group " +
                                   std::to_string(c.gid) +
                                   " write and search on it, and a default ACL so runs "
                                   "share what they write (docs/deployment.md)");
  }
  if (!c.run_uids_warning.empty()) LOG_WARN("per-run uids: %s", c.run_uids_warning.c_str());
  c.run_uids = std::make_shared<RunUidPool>(std::move(dir.fd), dir.path, range, [](uint32_t uid) {
    return ProbeUidProcesses(uid) != UidProcesses::kNone;
  });
  return "";
}

std::string RunIdentityRefusal(const LaunchConfig& c) {
  // why: the operator named a range; runs under a shared uid instead are refused.
  if (c.run_uids_demanded && !c.run_uids)
    return "SKILL_MCP_RUN_UIDS names a range, but " + c.run_uids_off_reason;
  return "";
}

}  // namespace skillmcp
