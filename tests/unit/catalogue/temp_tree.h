// Real directory trees for the catalogue tests, under a fresh mkdtemp directory.
#pragma once

#include <string>
#include <vector>

#include "broker/catalogue/frontmatter.h"
#include "broker/catalogue/manifest.h"
#include "broker/catalogue/skill.h"

namespace skillmcp::testing {

class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  // Creates parent directories as needed.
  void Write(const std::string& rel, const std::string& content) const;
  void Mkdir(const std::string& rel) const;
  void Symlink(const std::string& target, const std::string& rel) const;
  void Fifo(const std::string& rel) const;
  // A SKILL.md with `name`/`description` and extra frontmatter lines, then `body`.
  void Skill(const std::string& dir, const std::string& name, const std::string& extra = "",
             const std::string& body = "\n# Instructions\n") const;

 private:
  std::string root_;
};

// Problems with the given reason.
std::vector<Problem> ProblemsWith(const Catalogue& cat, const std::string& reason);
bool HasProblem(const Catalogue& cat, const std::string& reason, const std::string& path);
const Skill* FindSkill(const Catalogue& cat, const std::string& name);
std::vector<std::string> SkillNames(const Catalogue& cat);
std::string DumpProblems(const Catalogue& cat);

// The scan of one root, named SKILLS_DIR.
Catalogue Scan(const std::string& root);
// A parsed SKILL.md's issues, one "reason: detail" line each.
std::string Issues(const ParsedSkillMd& p);
// The manifest walk of `dir`, opened here with O_PATH (a failed open fails the test).
ManifestResult Walk(const std::string& dir);

}  // namespace skillmcp::testing
