#include "shared/log.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace skillmcp::log {
namespace {

constexpr const char* kProgram = "skill-mcp";

const char* LevelName(Level level) {
  switch (level) {
    case Level::kInfo: return "info";
    case Level::kWarn: return "warning";
    case Level::kError: return "error";
  }
  return "?";
}

}  // namespace

void Write(Level level, int err, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s: %s\n", kProgram, LevelName(level), msg, strerror(err));
  } else {
    fprintf(stderr, "%s: %s: %s\n", kProgram, LevelName(level), msg);
  }
  fflush(stderr);
}

}  // namespace skillmcp::log
