#include "broker/catalogue/scan.h"

#include <sched.h>
#include <sys/resource.h>

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
    std::vector<Candidate> candidates;
    for (const auto& root : roots) FindCandidates(root, &candidates, &cat.problems);
    candidates = RefuseDuplicates(DistinctDirectories(std::move(candidates)), &cat.problems);
    threads = ThreadsWithinDescriptors(threads, candidates.size());
    size_t at = 0;
    // Batches of the skills still missing to the limit: if every one of them loads, the
    // limit is reached exactly at the batch's end, so one thread would read them all too.
    while (at < candidates.size() && cat.skills.size() < kMaxSkills) {
      const size_t count = std::min(kMaxSkills - cat.skills.size(), candidates.size() - at);
      std::vector<Read> batch = ReadBatch(candidates, at, count, threads);
      for (Read& r : batch) {
        for (Problem& p : r.problems) cat.problems.push_back(std::move(p));
        if (r.failed) {
          // Allocation failure is the only way here; serve what was found so far.
          LOG_ERROR("skill discovery stopped early: %s",
                    r.error.empty() ? "an unknown error" : r.error.c_str());
          DropRepeatedProblems(&cat.problems);
          return cat;
        }
        if (r.skill) cat.skills.push_back(std::move(*r.skill));
      }
      at += count;
    }
    for (; at < candidates.size(); ++at) {
      const Candidate& c = candidates[at];
      cat.problems.push_back({c.path, reason::kSkillLimit,
                              "more than " + std::to_string(kMaxSkills) + " skills were found; '" +
                                  c.name + "' is not served (the first " +
                                  std::to_string(kMaxSkills) +
                                  " found are). Move some skills to another server"});
    }
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
