// The broker's boot sequence, shared by `serve` and `doctor` so the report describes
// exactly what serving would have in force. Order matters and is commented in boot.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "broker/audit/audit_sink.h"
#include "broker/catalogue/skill.h"
#include "broker/cli/roots.h"
#include "broker/confirm/gate_config.h"
#include "broker/confirm/tokens.h"
#include "broker/grants/grants.h"
#include "broker/harden/env_store.h"
#include "broker/harden/layers.h"
#include "broker/run/launch_config.h"

namespace skillmcp {

// SKILL_MCP_WATCH (broker/cli/watch.h): unset is on where inotify works.
enum class WatchSetting { kDefault, kOn, kOff };

struct Boot {
  EnvStore env;
  IsolationFacts facts;
  std::optional<LaunchConfig> launch;
  Roots roots;
  Catalogue catalogue;
  GrantDecision grants;
  GateConfig gate;
  AuditTarget audit = AuditTarget::kAuto;  // SKILL_MCP_AUDIT
  WatchSetting watch = WatchSetting::kDefault;
  std::unique_ptr<ConfirmTokens> tokens;
  std::optional<std::string> runs_blocked;  // why no script may run on this host
  bool environ_blocked = false;             // runs_blocked: the environ could not be wiped
  bool catalogue_loaded = false;            // LoadCatalogue has run
  std::string fatal;                        // non-empty: refuse to start, say this
};

// When BootBroker scans the catalogue: at once (doctor), or left to the caller (serve),
// who calls LoadCatalogue before anything reads the catalogue or the grants.
enum class CatalogueTiming { kNow, kDeferred };

// Hardens the process, captures and wipes the environment, drops privileges, resolves
// the launch configuration, scans the catalogue once, decides grants and the gate.
// kDeferred (serve) leaves the namespace probe for after start: launch->namespaces_pending
// then says one is due, and SettleRunFacts follows its DecideNamespaces.
std::unique_ptr<Boot> BootBroker(NamespaceProbeTiming probe = NamespaceProbeTiming::kNow,
                                 CatalogueTiming catalogue = CatalogueTiming::kNow);

// Scans the catalogue, decides the grants and settles what depends on them (the roots
// hidden from runs, the run facts). Once: later calls do nothing. Runs with the service
// identity only: BootBroker has dropped privileges before it returns.
void LoadCatalogue(Boot& b);

// A rescan's catalogue in place of the one served (SKILL_MCP_WATCH), on the loop: the
// grants, the roots hidden from runs and the run facts are decided again for it, as
// LoadCatalogue decides them.
void ReplaceCatalogue(Boot& b, Catalogue fresh);
// What LoadCatalogue and ReplaceCatalogue decide from b.catalogue.
void SettleCatalogue(Boot& b);

// The isolation facts and runs_blocked from the launch configuration as it stands.
void SettleRunFacts(Boot& b);

}  // namespace skillmcp
