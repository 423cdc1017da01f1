// Discovery, once per process (docs/wire.md §1 and §3): every skill under the roots, in
// discovery order (roots as configured; within a root the order of FindCandidates in
// roots.h), each with an open descriptor on its real directory, plus every problem met.
//
// Decisions (each tested):
// - The same real directory (device + inode) reached twice is one skill; the first path
//   reaching it in discovery order is kept.
// - Two different directories serving one name are all refused, with one `duplicate-name`
//   problem per name.
// - Over kMaxSkills: the first kMaxSkills SERVABLE skills in discovery order are kept; the
//   rest are not read, and one `skill-limit` problem (at the roots joined with ':') names
//   them.
// - Problems come per root (the scan's, its `no-skill-md` ones, then its skills' in
//   discovery order), then `duplicate-name`, then `skill-limit` (docs/wire.md §3).
// - Skills are read on up to `threads` threads (each skill whole on one), in batches of
//   at most the skills still missing to kMaxSkills, so exactly the candidates one thread
//   would read are read; results merge in discovery order, so the catalogue is the same
//   for any number of threads (tests/unit/catalogue/scan_threads_test.cc).
#pragma once

#include <string>
#include <vector>

#include "broker/catalogue/skill.h"

namespace skillmcp {

// How many threads ScanCatalogue reads skills on by default: the CPUs this process may
// use, at most 4.
unsigned DefaultScanThreads();

// At most `threads` (at least 1), fewer where RLIMIT_NOFILE leaves no room for each
// thread's deepest manifest walk beside the `held` descriptors the scan already holds.
unsigned ThreadsWithinDescriptors(unsigned threads, size_t held);

// Never throws; one bad skill costs only itself. Without `threads`: DefaultScanThreads().
Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from,
                        unsigned threads);
Catalogue ScanCatalogue(const std::vector<std::string>& roots, std::string roots_from);

}  // namespace skillmcp
