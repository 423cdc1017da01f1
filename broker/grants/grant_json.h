// skill_list's grant fields in docs/wire.md key order, so the server emits exactly them.
#pragma once

#include <nlohmann/json.hpp>

#include "broker/grants/grants.h"

namespace skillmcp {

// Appends `grantFrom`, then `grantNote` and `grantError` when present (call after
// `rootsFrom`).
void AppendCatalogueGrantFields(nlohmann::ordered_json& list, const GrantDecision& decision);

// Appends `executable`, `scripts`, `unavailableScripts` (always) and `ungrantedScripts`
// (only when non-empty) to one skill entry (call after `bytes`).
void AppendSkillGrantFields(nlohmann::ordered_json& entry, const SkillGrants& grants);

}  // namespace skillmcp
