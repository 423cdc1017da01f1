// Wipes the exec-time environment block so /proc/<pid>/environ reads empty. Call it
// after EnvStore::Capture has copied every variable into guarded memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skillmcp {

struct ScrubResult {
  bool ok = false;     // the block is zeroed AND the read-back saw no byte but NUL
  std::string detail;  // how it was done and verified, or what failed
};

// Never throws. Works whether or not the process is already non-dumpable (see .cc).
ScrubResult ScrubEnviron();

// Pure: env_start and env_end (fields 50 and 51) from the text of /proc/<pid>/stat,
// counted after the last ')' so a command name holding ") " cannot shift them.
bool ParseEnvRange(std::string_view stat, uint64_t* start, uint64_t* end);

// Pure: whether [start, end) lies inside one writable mapping of a /proc/<pid>/maps text.
bool RangeInWritableMapping(std::string_view maps, uint64_t start, uint64_t end);

}  // namespace skillmcp
