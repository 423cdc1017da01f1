#include "broker/cli/boot.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "broker/cli/roots.h"
#include "broker/harden/credentials.h"
#include "broker/harden/environ_scrub.h"
#include "broker/harden/privileges.h"
#include "broker/harden/process_harden.h"
#include "broker/harden/state_dir.h"
#include "shared/log.h"

extern char** environ;

namespace skillmcp {

namespace {

// Why: the catalogue reads skills on several threads, each holding up to about 530
// directory descriptors (broker/catalogue/scan.cc), and the broker waits with epoll, which
// has no FD_SETSIZE bound; so the soft limit rises towards the hard one (capped). Runs are
// unaffected: the worker sets their own RLIMIT_NOFILE (worker/limits.cc).
void RaiseOpenFileLimit() {
  constexpr rlim_t kWanted = 65536;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= kWanted) return;
  lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? kWanted : std::min(lim.rlim_max, kWanted);
  setrlimit(RLIMIT_NOFILE, &lim);
}

// Why: a root stdio broker must share the unit's pool of run uids and its spent-token
// record (docs/isolation.md, "Own identity per run"), and only root can make the
// directory for the service user, so it is made now, before the privilege drop.
// Not for a broker run from its build tree (tests, development; as DefaultRoot in
// roots.cc): it leaves the host's directory alone and needs SKILL_MCP_STATE_DIR.
HostStateDefault HostStateDefaultFor(const EnvStore& env) {
  uid_t r, e, s;
  const auto get = [&env](std::string_view n) { return env.GetConfig(n); };
  if (getresuid(&r, &e, &s) != 0 || (r != 0 && e != 0 && s != 0) || !NeedsHostStateDefault(get))
    return {};
  HostStateDefault out;
  out.applies = true;
  if (RunsFromBuildTree()) {
    out.error = "a broker run from its build tree does not use the host-wide " +
                std::string(kHostStateDir) + "; set SKILL_MCP_STATE_DIR";
    return out;
  }
  Identity service = ResolveIdentity(PrivilegeOptionsFrom(env).service_user, kFallbackServiceId);
  // why: without a service identity the broker refuses to serve anyway; make nothing.
  if (!service.ok) {
    out.error = "no service user to own " + std::string(kHostStateDir) + ": " + service.error;
    return out;
  }
  return PrepareHostStateDir(kHostStateDir, service.uid, service.gid);
}

}  // namespace

void SettleRunFacts(Boot& b) {
  b.facts.worker = LayerFacts(*b.launch);
  if (!b.runs_blocked && !b.launch->ready())
    b.runs_blocked = "no script can run here: " + b.launch->refusal;
}

std::unique_ptr<Boot> BootBroker(NamespaceProbeTiming probe, CatalogueTiming catalogue) {
  auto b = std::make_unique<Boot>();
  // 1. Before reading any configuration: no dumping, no core, fds 0-2 present.
  b->facts.process = HardenProcess();
  RaiseOpenFileLimit();
  if (!b->facts.process.detail.empty()) {
    LOG_WARN("process hardening: %s", b->facts.process.detail.c_str());
  }
  // 2. Move the environment into guarded memory, then wipe the exec-time block so
  //    /proc/<pid>/environ reads empty.
  b->env = EnvStore::Capture(environ);
  b->facts.scrub = ScrubEnviron();
  b->facts.scrub_attempted = true;
  if (auto dir = b->env.GetConfig("CREDENTIALS_DIRECTORY")) {
    CredentialsResult creds = LoadCredentials(*dir, b->env);
    for (const auto& r : creds.refused) LOG_WARN("credential refused: %s", r.c_str());
    if (!creds.detail.empty()) LOG_WARN("credentials: %s", creds.detail.c_str());
  }
  b->facts.hosted = IsHosted([&b](std::string_view n) { return b->env.GetConfig(n); });
  // Why: only the exact value "1" waives the refusal; "0", "no" or a typo keep it.
  b->facts.allow_unscrubbed = b->env.GetConfig("MCP_SKILL_ALLOW_UNSCRUBBED") == "1";

  // 3. Stop being root before touching any skill: parsing untrusted SKILL.md files and
  //    reading bundles happens with the service identity only. Just before, as root, the
  //    host-wide state directory where no variable names one (HostStateDefaultFor).
  HostStateDefault host_state = HostStateDefaultFor(b->env);
  b->facts.privileges = DropPrivileges(PrivilegeOptionsFrom(b->env));
  b->facts.privileges.host_state = std::move(host_state);
  if (!b->facts.privileges.ok()) {
    b->fatal = "started as root but could not switch to the service user (" +
               b->facts.privileges.detail +
               "); refusing to serve as root. Set SKILL_MCP_USER to an existing "
               "unprivileged user, or start skill-mcp as one.";
    return b;
  }
  // 4. The pinned interpreters and the worker, opened by descriptor now.
  LaunchConfigResult launch = ResolveLaunchConfig(b->env, b->facts.privileges, probe);
  if (!launch.config) {
    b->fatal = launch.error;
    return b;
  }
  b->launch = std::move(launch.config);

  // 5. Whether anything may run at all.
  if (b->facts.hosted && !b->facts.scrub.ok && !b->facts.allow_unscrubbed) {
    // Why: hosted, one environment holds every credential of the registration; if a
    // same-uid script could read it from /proc, no script may run.
    b->runs_blocked =
        "no script runs on this host: the exec-time environment block could not be wiped (" +
        b->facts.scrub.detail +
        "), so a script could read every credential from /proc. The owner can set "
        "MCP_SKILL_ALLOW_UNSCRUBBED=1 to accept that.";
    b->environ_blocked = true;
  }
  SettleRunFacts(*b);

  // 6. The catalogue, scanned once: now, or when serve asks (after the first answer).
  if (catalogue == CatalogueTiming::kNow) LoadCatalogue(*b);

  // 7. Where the audit trail goes (docs/audit.md); a value that is not understood stops the
  //    boot, since the operator asked for a trail the broker cannot say it keeps.
  const std::string audit = b->env.GetConfig("SKILL_MCP_AUDIT").value_or("");
  std::optional<AuditTarget> target = ParseAuditTarget(audit);
  if (!target) {
    b->fatal = "SKILL_MCP_AUDIT=\"" + audit + "\" is not auto, journal or stderr";
    return b;
  }
  b->audit = *target;

  // 8. Whether the catalogue is watched (docs/configuration.md, "SKILL_MCP_WATCH").
  const std::string watch = b->env.GetConfig("SKILL_MCP_WATCH").value_or("");
  if (watch == "on") {
    b->watch = WatchSetting::kOn;
  } else if (watch == "off") {
    b->watch = WatchSetting::kOff;
  } else if (!watch.empty()) {
    b->fatal = "SKILL_MCP_WATCH=\"" + watch + "\" is not on or off";
    return b;
  }

  // 9. The confirmation gate and its signing key.
  b->gate = ParseGateConfig([env = &b->env](std::string_view n) { return env->GetConfig(n); });
  for (const auto& w : b->gate.warnings) LOG_WARN("%s", w.c_str());
  if (b->env.IsSet("MCP_CONFIRM_SECRET")) {
    b->env.WithValue("MCP_CONFIRM_SECRET", [&b](std::string_view secret) {
      b->tokens = ConfirmTokens::CreateFromSecret(secret);
    });
    // Why: every broker with this key accepts its tokens, so a spend must be seen by all
    // of them and survive a restart; without the shared record no token is honoured.
    SpentDir::Opened spent =
        OpenSpentDirFromEnv([env = &b->env](std::string_view n) { return env->GetConfig(n); },
                            b->facts.privileges.host_state);
    b->facts.shared_tokens = true;
    if (spent.dir) {
      LOG_INFO("spent confirmation tokens are recorded in %s", spent.dir->path().c_str());
      b->facts.spent_dir_path = spent.dir->path();
      // why: a record in this process's private /tmp is seen by no other broker.
      b->facts.spent_dir_problem = PrivateTmpProblemHere(spent.dir->path());
      if (!b->facts.spent_dir_problem.empty())
        LOG_WARN("spent tokens are not host-wide: %s", b->facts.spent_dir_problem.c_str());
    } else {
      LOG_WARN("confirmation tokens cannot be used: %s", spent.error.c_str());
      b->facts.spent_dir_problem = "confirmation tokens cannot be used: " + spent.error;
    }
    if (b->tokens) b->tokens->UseSpentDir(std::move(spent));
  } else {
    b->tokens = ConfirmTokens::CreateRandom();
  }
  return b;
}

void LoadCatalogue(Boot& b) {
  if (b.catalogue_loaded) return;
  b.catalogue_loaded = true;
  b.roots = ResolveRoots(b.env);
  b.catalogue = ScanCatalogue(b.roots.paths, b.roots.from);
  SettleCatalogue(b);
}

void ReplaceCatalogue(Boot& b, Catalogue fresh) {
  b.catalogue = std::move(fresh);
  SettleCatalogue(b);
}

void SettleCatalogue(Boot& b) {
  {
    std::vector<std::string> dirs;
    for (const Skill& s : b.catalogue.skills) dirs.push_back(s.source);
    SetHiddenRoots(*b.launch, b.roots.paths, dirs);
  }
  std::vector<std::string> interpreters;
  for (const PinnedInterpreter& p : b.launch->interpreters) interpreters.push_back(p.name);
  b.grants =
      DecideGrants(b.catalogue, b.env.GetConfig("MCP_SKILL_RUN"), b.facts.hosted, interpreters);
  if (b.environ_blocked) {
    b.catalogue.problems.push_back(Problem{"/proc/" + std::to_string(getpid()) + "/environ",
                                           std::string(reason::kEnvironUnscrubbed),
                                           *b.runs_blocked});
  }
  // The hidden roots may have turned the namespace layer off or refused it (launch_config.h).
  SettleRunFacts(b);
}

}  // namespace skillmcp
