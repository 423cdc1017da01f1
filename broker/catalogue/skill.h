// The catalogue's data model: what discovery found, held in memory for the process
// lifetime (scanned once at boot; nothing is cached on disk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shared/unique_fd.h"

namespace skillmcp {

// The file that makes a directory a skill.
inline constexpr char kSkillMd[] = "SKILL.md";

// One entry of skill_list's `problems`: `reason` is the stable value clients switch on,
// `detail` is prose for a person.
struct Problem {
  std::string path;
  std::string reason;
  std::string detail;
};

// One `mcp-host: run:` entry as declared (after strict parsing and the reserved-name strip).
struct DeclaredRun {
  std::string script;             // contained relative path, as declared
  std::string interpreter;        // as declared; only "node" is runnable in v1
  std::vector<std::string> env;   // variable names the script asks for (reserved dropped)
  int64_t timeout_ms = 60000;     // declared timeout x1000, clamped to 300000
};

// One `mcp-host: env:` entry: a field proposed for the SERVER's environment (a proposal
// for the owner; it grants nothing).
struct DeclaredEnvField {
  std::string name;
  bool secret = true;  // treated as secret unless declared `secret: false`
};

struct ManifestFile {
  std::string path;   // relative to the skill directory, '/'-separated
  uint64_t size = 0;
};

struct Skill {
  std::string name;                          // the directory name; never the frontmatter's
  std::optional<std::string> description;
  std::optional<std::string> when_to_use;    // frontmatter `when-to-use` (or `when_to_use`)
  std::string root;                          // the root it was found under, as configured:
                                             // the `source` skill_list and skill_load show
  std::string source;                        // real absolute path of the skill directory
  UniqueFd dir;                              // O_PATH|O_DIRECTORY fd of `source`; every read
                                             // and every run resolves beneath it
  std::vector<ManifestFile> files;           // collated (collate.h: localeCompare's order)
  uint64_t bytes = 0;                        // sum of file sizes
  bool files_complete = true;                // the walk finished: `files` is every file
                                             // (false after a `file-limit` stop)
  std::string body;                          // SKILL.md after the frontmatter, verbatim
  bool body_truncated = false;               // SKILL.md was over 262144 bytes
  bool declaration_present = false;          // an mcp-host: block was there
  bool declaration_ok = false;               // ...and was accepted (runs below are usable)
  std::vector<DeclaredRun> runs;             // empty when the block was refused; a run's
                                             // file may be missing (skill_run refuses it)
  std::vector<std::string> declared_egress;  // `egress:` proposal: host patterns, verbatim
  std::string frontmatter_json;              // the frontmatter rendered as JSON (skills
                                             // extension); empty when it cannot be
  // Set when the skill misses the skills extension's naming rule or limits
  // (skills_ext_check.h): why skills/list leaves it out (a skills-ext-* reason).
  std::optional<Problem> skills_ext_omission;
};

struct Catalogue {
  std::vector<std::string> roots;   // as configured
  std::string roots_from;           // "MCP_SKILLS_PATH" | "SKILLS_DIR" | "default"
  std::vector<Skill> skills;        // in discovery order (scan.h); at most kMaxSkills
  std::vector<Problem> problems;    // in discovery order
};

// The limits of docs/wire.md §1, §3 and §4. Why each: a hostile or careless skill tree
// must not grow the server's memory, descriptors or start-up without bound, nor hold a
// run (and its confirmation) open indefinitely.
inline constexpr size_t kMaxSkills = 32;            // listings and prompts stay readable
inline constexpr size_t kMaxFilesPerSkill = 2000;   // manifest size and walk time
inline constexpr size_t kMaxDirsPerSkill = 2000;    // walk depth/breadth and descriptors
inline constexpr size_t kSkillMdCap = 262144;       // instructions held in memory per skill
inline constexpr size_t kFrontmatterCap = 65536;    // YAML parsed strictly, twice
inline constexpr int64_t kDefaultTimeoutMs = 60000;
inline constexpr int64_t kMaxTimeoutMs = 300000;    // no declaration can ask for longer

}  // namespace skillmcp
