#include "tests/unit/catalogue/temp_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "broker/catalogue/scan.h"
#include "shared/unique_fd.h"

namespace skillmcp::testing {

TempTree::TempTree() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "catalogue-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  // Real paths, so that tests can compare with what the scan reports.
  root_ = std::filesystem::canonical(tmpl).string();
}

TempTree::~TempTree() {
  std::error_code ec;
  // Restore permissions a test may have removed, then delete everything.
  for (auto it = std::filesystem::recursive_directory_iterator(
           root_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0755);
  }
  std::filesystem::remove_all(root_, ec);
}

void TempTree::Mkdir(const std::string& rel) const {
  std::filesystem::create_directories(Path(rel));
}

void TempTree::Write(const std::string& rel, const std::string& content) const {
  std::filesystem::path p(Path(rel));
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

void TempTree::Symlink(const std::string& target, const std::string& rel) const {
  std::filesystem::path p(Path(rel));
  std::filesystem::create_directories(p.parent_path());
  if (symlink(target.c_str(), p.c_str()) != 0) throw std::runtime_error("symlink failed");
}

void TempTree::Fifo(const std::string& rel) const {
  std::filesystem::path p(Path(rel));
  std::filesystem::create_directories(p.parent_path());
  if (mkfifo(p.c_str(), 0644) != 0) throw std::runtime_error("mkfifo failed");
}

void TempTree::Skill(const std::string& dir, const std::string& name, const std::string& extra,
                     const std::string& body) const {
  std::string rel = dir.empty() ? "SKILL.md" : dir + "/SKILL.md";
  Write(rel,
        "---\nname: " + name + "\ndescription: The " + name + " skill.\n" + extra + "---" + body);
}

std::vector<Problem> ProblemsWith(const Catalogue& cat, const std::string& reason) {
  std::vector<Problem> out;
  for (const auto& p : cat.problems) {
    if (p.reason == reason) out.push_back(p);
  }
  return out;
}

bool HasProblem(const Catalogue& cat, const std::string& reason, const std::string& path) {
  for (const auto& p : cat.problems) {
    if (p.reason == reason && p.path == path) return true;
  }
  return false;
}

const Skill* FindSkill(const Catalogue& cat, const std::string& name) {
  for (const auto& s : cat.skills) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> SkillNames(const Catalogue& cat) {
  std::vector<std::string> out;
  for (const auto& s : cat.skills) out.push_back(s.name);
  return out;
}

std::string DumpProblems(const Catalogue& cat) {
  std::string out;
  for (const auto& p : cat.problems) out += p.reason + " " + p.path + ": " + p.detail + "\n";
  return out;
}

Catalogue Scan(const std::string& root) { return ScanCatalogue({root}, "SKILLS_DIR"); }

std::string Issues(const ParsedSkillMd& p) {
  std::string s;
  for (const auto& i : p.issues) s += std::string(i.reason) + ": " + i.detail + "\n";
  return s;
}

ManifestResult Walk(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(fd.valid()) << dir;
  return WalkManifest(fd.get(), dir);
}

}  // namespace skillmcp::testing
