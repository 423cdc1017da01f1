#include "broker/catalogue/scan.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "broker/catalogue/load.h"
#include "broker/catalogue/manifest.h"
#include "broker/catalogue/reasons.h"
#include "broker/catalogue/roots.h"
#include "shared/log.h"
#include "shared/relpath.h"

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
// name (and its grants) by being found first; so all are refused, with one problem per
// name (at the first directory found, the detail naming every one).
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
    if (same.front() != i) continue;  // reported with the first one
    std::string dirs;
    for (size_t j : same) dirs += (dirs.empty() ? "" : ", ") + DisplaySafe(all[j].source);
    problems->push_back({DisplaySafe(all[i].source), reason::kDuplicateName,
                         "the name '" + DisplaySafe(all[i].name) + "' is served by " +
                             std::to_string(same.size()) + " directories (" + dirs +
                             "); none is served until only one directory has that name"});
  }
  return out;
}

// The one `skill-limit` problem (docs/wire.md §3): at the roots joined with ':', naming
// the skills not served and whether some directories were not examined at all.
Problem SkillLimitProblem(const std::vector<std::string>& roots,
                          const std::vector<std::string>& unserved, bool unexamined) {
  std::string path;
  for (const auto& r : roots) path += (path.empty() ? "" : ":") + r;
  std::string detail = "more than " + std::to_string(kMaxSkills) +
                       " skills were found; the first " + std::to_string(kMaxSkills) +
                       " in discovery order are served";
  if (!unserved.empty()) {
    constexpr size_t kNamed = 16;  // the detail stays readable
    detail += ", these are not: ";
    for (size_t i = 0; i < unserved.size() && i < kNamed; ++i)
      detail += (i == 0 ? "" : ", ") + DisplaySafe(unserved[i]);
    if (unserved.size() > kNamed)
      detail += " and " + std::to_string(unserved.size() - kNamed) + " more";
  }
  if (unexamined) {
    detail += "; some directories were not examined at all (over " +
              std::to_string(kMaxRootEntries) + " entries in one directory, or over " +
              std::to_string(kMaxCandidates) + " skill directories)";
  }
  return {DisplaySafe(path), reason::kSkillLimit, detail + ". Move some skills to another server"};
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

// One candidate read: the skill, or its problems; `failed` when reading it threw (only an
// allocation failure can), with `error` saying what when that could be kept.
struct Read {
  std::optional<Skill> skill;
  std::vector<Problem> problems;
  bool failed = false;
  std::string error;
};

// Reads candidates [first, first + count) on up to `threads` threads, the calling one
// included. Each thread takes the next unread candidate; nothing is shared but the index
// and the stop flag. Every thread started is joined before this returns, whatever throws.
std::vector<Read> ReadBatch(std::vector<Candidate>& all, size_t first, size_t count,
                            unsigned threads) {
  std::vector<Read> out(count);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto work = [&]() noexcept {
    for (size_t i; !stop.load() && (i = next.fetch_add(1)) < count;) {
      // As the loop on one thread did: nothing after a failed read is read.
      try {
        out[i].skill = LoadSkill(std::move(all[first + i]), &out[i].problems);
      } catch (const std::exception& e) {
        out[i].failed = true;
        stop.store(true);
        try {
          out[i].error = e.what();  // may itself fail to allocate: then no message
        } catch (...) {
        }
      } catch (...) {
        out[i].failed = true;
        stop.store(true);
      }
    }
  };
  std::vector<std::thread> helpers;
  try {
    helpers.reserve(threads);
    for (unsigned t = 1; t < threads && t < count; ++t) helpers.emplace_back(work);
  } catch (...) {
    // Fewer threads (no thread, no memory for one), same result.
  }
  work();
  for (std::thread& h : helpers) h.join();
  return out;
}

}  // namespace

// Descriptors one skill's read may hold at once: the manifest walk keeps every ancestor
// directory open (a path is at most kMaxRelPathBytes, so half as many levels), plus a few.
constexpr size_t kDescriptorsPerRead = kMaxRelPathBytes / 2 + 16;

// Why a budget: the threads share one descriptor table; a deep tree read on one must not
// make another skill's read fail with EMFILE (one bad skill costs only itself, whatever
// the thread count). `held`: the descriptors the scan already holds.
unsigned ThreadsWithinDescriptors(unsigned threads, size_t held) {
  threads = std::max(threads, 1u);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return threads;
  const size_t reserve = held + 64;  // the broker's own, the candidates', slack
  if (lim.rlim_cur <= reserve + kDescriptorsPerRead) return 1;
  const size_t fit = (lim.rlim_cur - reserve) / kDescriptorsPerRead;
  return static_cast<unsigned>(std::clamp<size_t>(fit, 1, threads));
}

unsigned DefaultScanThreads() {
  // The CPUs this process may run on (a container's cpuset, taskset), not the host's.
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return static_cast<unsigned>(std::clamp(cpus, 1, 4));
}

Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from,
                        unsigned threads) {
  Catalogue cat;
  cat.roots = roots;
  cat.roots_from = std::move(roots_from);
  try {
    // Problems in the reference's order (docs/wire.md §3): per root, what the scan met,
    // then its skills' own problems in discovery order; then duplicate names, the skill
    // limit (reported once), and (in skill_list) the grants.
    std::vector<Candidate> candidates;
    std::vector<std::vector<Problem>> per_root(roots.size());
    bool unexamined = false;
    for (size_t r = 0; r < roots.size(); ++r) {
      const size_t first = candidates.size();
      FindCandidates(roots[r], &candidates, &per_root[r]);
      for (size_t i = first; i < candidates.size(); ++i) candidates[i].root_index = r;
      const auto limit = std::remove_if(
          per_root[r].begin(), per_root[r].end(),
          [](const Problem& p) { return p.reason == std::string_view(reason::kSkillLimit); });
      unexamined = unexamined || limit != per_root[r].end();
      per_root[r].erase(limit, per_root[r].end());
    }
    std::vector<Problem> after_roots;
    candidates = RefuseDuplicates(DistinctDirectories(std::move(candidates)), &after_roots);
    threads = ThreadsWithinDescriptors(threads, candidates.size());
    size_t at = 0;
    bool stopped = false;
    // Batches of the skills still missing to the limit: if every one of them loads, the
    // limit is reached exactly at the batch's end, so one thread would read them all too.
    while (!stopped && at < candidates.size() && cat.skills.size() < kMaxSkills) {
      const size_t count = std::min(kMaxSkills - cat.skills.size(), candidates.size() - at);
      std::vector<Read> batch = ReadBatch(candidates, at, count, threads);
      for (size_t i = 0; i < batch.size() && !stopped; ++i) {
        Read& r = batch[i];
        std::vector<Problem>& into = per_root[candidates[at + i].root_index];
        for (Problem& p : r.problems) into.push_back(std::move(p));
        if (r.failed) {
          // Allocation failure is the only way here; serve what was found so far.
          LOG_ERROR("skill discovery stopped early: %s",
                    r.error.empty() ? "an unknown error" : r.error.c_str());
          stopped = true;
        } else if (r.skill) {
          cat.skills.push_back(std::move(*r.skill));
        }
      }
      at += count;
    }
    std::vector<std::string> unserved;
    for (size_t i = at; !stopped && i < candidates.size(); ++i)
      unserved.push_back(candidates[i].name);
    for (auto& problems : per_root)
      for (Problem& p : problems) cat.problems.push_back(std::move(p));
    for (Problem& p : after_roots) cat.problems.push_back(std::move(p));
    if (!unserved.empty() || unexamined)
      cat.problems.push_back(SkillLimitProblem(roots, unserved, unexamined));
  } catch (const std::exception& e) {
    // Allocation failure is the only way here; serve what was found so far.
    LOG_ERROR("skill discovery stopped early: %s", e.what());
  }
  DropRepeatedProblems(&cat.problems);
  return cat;
}

Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from) {
  return ScanCatalogue(roots, std::move(roots_from), DefaultScanThreads());
}

}  // namespace skillmcp
