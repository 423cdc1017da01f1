// Reading one skill: SKILL.md (beneath the skill's descriptor, capped, never blocking on a
// FIFO), its frontmatter and declaration, the declared scripts' presence, its manifest.
#pragma once

#include <optional>
#include <vector>

#include "broker/catalogue/roots.h"
#include "broker/catalogue/skill.h"

namespace skillmcp {

// Returns the skill when it can be served; problems are appended either way.
std::optional<Skill> LoadSkill(Candidate candidate, std::vector<Problem>* problems);

}  // namespace skillmcp
