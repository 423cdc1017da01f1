#include "broker/catalogue/scan.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "broker/catalogue/load.h"
#include "broker/catalogue/reasons.h"
#include "broker/catalogue/roots.h"
#include "shared/log.h"

namespace skillmcp {
namespace {

// Drops later arrivals of a directory already found (a link to a listed skill).
std::vector<Candidate> DistinctDirectories(std::vector<Candidate> all) {
  std::vector<Candidate> out;
  std::set<std::pair<dev_t, ino_t>> seen;
  for (auto& c : all) {
    if (seen.insert({c.dev, c.ino}).second) out.push_back(std::move(c));
  }
  return out;
}

// Why: if one of two directories won by scan order, a bundle could claim its neighbour's
// name (and its grants) by being found first; so both are refused.
std::vector<Candidate> RefuseDuplicates(std::vector<Candidate> all,
                                        std::vector<Problem>* problems) {
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < all.size(); ++i) by_name[all[i].name].push_back(i);
  std::vector<Candidate> out;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& same = by_name[all[i].name];
    if (same.size() == 1) {
      out.push_back(std::move(all[i]));
      continue;
    }
    std::string others;
    for (size_t j : same) {
      if (j != i) others += (others.empty() ? "" : ", ") + all[j].source;
    }
    problems->push_back({all[i].path, reason::kDuplicateName,
                         "the name '" + all[i].name + "' is also served by " + others +
                             "; neither is served until only one directory has that name"});
  }
  return out;
}

// A root listed twice (or overlapping roots) meets the same fault twice: say it once.
void DropRepeatedProblems(std::vector<Problem>* problems) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<Problem> out;
  for (auto& p : *problems) {
    if (seen.insert({p.path, p.reason, p.detail}).second) out.push_back(std::move(p));
  }
  *problems = std::move(out);
}

}  // namespace

Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from) {
  Catalogue cat;
  cat.roots = roots;
  cat.roots_from = std::move(roots_from);
  try {
    std::vector<Candidate> candidates;
    for (const auto& root : roots) FindCandidates(root, &candidates, &cat.problems);
    candidates = RefuseDuplicates(DistinctDirectories(std::move(candidates)), &cat.problems);
    for (auto& c : candidates) {
      if (cat.skills.size() >= kMaxSkills) {
        cat.problems.push_back({c.path, reason::kSkillLimit,
                                "more than " + std::to_string(kMaxSkills) +
                                    " skills were found; '" + c.name +
                                    "' is not served (the first " + std::to_string(kMaxSkills) +
                                    " found are). Move some skills to another server"});
        continue;
      }
      if (auto skill = LoadSkill(std::move(c), &cat.problems)) {
        cat.skills.push_back(std::move(*skill));
      }
    }
  } catch (const std::exception& e) {
    // Allocation failure is the only way here; serve what was found so far.
    LOG_ERROR("skill discovery stopped early: %s", e.what());
  }
  DropRepeatedProblems(&cat.problems);
  return cat;
}

}  // namespace skillmcp
