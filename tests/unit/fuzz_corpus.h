// A fuzz target's seed corpus (tests/fuzz/corpus/<target>/), read for a unit test that
// replays it with the target's invariants and pins which seeds a decoder accepts, so a seed
// that stops being the frame its name says fails here rather than fuzzing nothing.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "config.h"

namespace skillmcp {

// File name -> bytes, every regular file of the target's corpus.
inline std::map<std::string, std::string> ReadFuzzCorpus(const std::string& target) {
  std::map<std::string, std::string> seeds;
  const std::filesystem::path dir =
      std::filesystem::path(SKILL_MCP_SOURCE_ROOT) / "tests/fuzz/corpus" / target;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    seeds[entry.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

}  // namespace skillmcp
