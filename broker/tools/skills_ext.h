// The Skills over MCP extension, `io.modelcontextprotocol/skills` (docs/wire.md
// §9): skills/list, skills/get and resources/directory/read over the boot catalogue.
//
// Decisions (each tested in tests/unit/tools/skills_ext_test.cc and
// tests/integration/skills_extension.test.mjs):
// - A skill's entry (frontmatter and every file's sha256 digest and size) is computed the
//   first time skills/list or skills/get needs it, then held for the process lifetime:
//   once per catalogue, never per call. Boot does not read a byte more than before.
// - Only skills without a skills_ext_omission (broker/catalogue/skills_ext_check.h) have
//   an entry; any other URI is -32602 for skills/get. A listed skill whose files cannot all be
//   hashed (one vanished or grew after boot) has no entry either: -32603 for skills/get,
//   left out of skills/list, the same answer every time.
// - Cursors are opaque to clients; an unknown one is -32602.
// - resources/directory/read answers for every skill the tools serve, from the manifest
//   walked at boot: the directories are those holding a served file.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "broker/tools/surfaces.h"

namespace skillmcp {

inline constexpr const char* kSkillsExtensionId = "io.modelcontextprotocol/skills";
// A skills/list page ends before the skill that would take it over this many resources
// (a page always holds at least one skill; an entry is never split).
inline constexpr size_t kSkillsPageResources = 1024;
inline constexpr size_t kDirectoryPageSize = kMaxResourcesListed;

class SkillsExtension {
 public:
  explicit SkillsExtension(CatalogueView view) : view_(view) {}

  // {"directoryRead": true}, for capabilities.extensions[kSkillsExtensionId].
  static OrderedJson Capability();

  SurfaceAnswer List(const Json& params);
  SurfaceAnswer Get(const Json& params);
  SurfaceAnswer ReadDirectory(const Json& params) const;

 private:
  struct Cached {
    std::optional<OrderedJson> entry;  // the Skill entry, or nullopt with `error`
    std::string error;
  };
  const Cached& EntryFor(const Skill& skill);

  CatalogueView view_;
  std::map<const Skill*, Cached> entries_;
};

}  // namespace skillmcp
