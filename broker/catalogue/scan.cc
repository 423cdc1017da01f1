#include "broker/catalogue/scan.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>
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

// One candidate read: the skill, or its problems; `error` when reading it threw (only an
// allocation failure can).
struct Read {
  std::optional<Skill> skill;
  std::vector<Problem> problems;
  std::string error;
};

// Reads candidates [first, first + count) on up to `threads` threads, the calling one
// included. Each thread takes the next unread candidate; nothing is shared but the index.
std::vector<Read> ReadBatch(std::vector<Candidate>& all, size_t first, size_t count,
                            unsigned threads) {
  std::vector<Read> out(count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        out[i].skill = LoadSkill(std::move(all[first + i]), &out[i].problems);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads && t < count; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads, same result
    }
  }
  work();
  for (std::thread& h : helpers) h.join();
  return out;
}

}  // namespace

unsigned DefaultScanThreads() {
  return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from,
                        unsigned threads) {
  Catalogue cat;
  cat.roots = roots;
  cat.roots_from = std::move(roots_from);
  try {
    std::vector<Candidate> candidates;
    for (const auto& root : roots) FindCandidates(root, &candidates, &cat.problems);
    candidates = RefuseDuplicates(DistinctDirectories(std::move(candidates)), &cat.problems);
    size_t at = 0;
    // Batches of the skills still missing to the limit: if every one of them loads, the
    // limit is reached exactly at the batch's end, so one thread would read them all too.
    while (at < candidates.size() && cat.skills.size() < kMaxSkills) {
      const size_t count = std::min(kMaxSkills - cat.skills.size(), candidates.size() - at);
      std::vector<Read> batch = ReadBatch(candidates, at, count, std::max(threads, 1u));
      for (Read& r : batch) {
        if (!r.error.empty()) {
          // Allocation failure is the only way here; serve what was found so far.
          LOG_ERROR("skill discovery stopped early: %s", r.error.c_str());
          DropRepeatedProblems(&cat.problems);
          return cat;
        }
        for (Problem& p : r.problems) cat.problems.push_back(std::move(p));
        if (r.skill) cat.skills.push_back(std::move(*r.skill));
      }
      at += count;
    }
    for (; at < candidates.size(); ++at) {
      const Candidate& c = candidates[at];
      cat.problems.push_back({c.path, reason::kSkillLimit,
                              "more than " + std::to_string(kMaxSkills) +
                                  " skills were found; '" + c.name +
                                  "' is not served (the first " + std::to_string(kMaxSkills) +
                                  " found are). Move some skills to another server"});
    }
  } catch (const std::exception& e) {
    // Allocation failure is the only way here; serve what was found so far.
    LOG_ERROR("skill discovery stopped early: %s", e.what());
  }
  DropRepeatedProblems(&cat.problems);
  return cat;
}

}  // namespace skillmcp
