#include "shared/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace skillmcp::log {
namespace {
Level g_level = Level::kInfo;
const char* g_name = "skill-mcp";

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warning";
    case Level::kError: return "error";
  }
  return "?";
}
}  // namespace

void SetLevel(Level level) { g_level = level; }
void SetProgramName(const char* name) { g_name = name; }

void Write(Level level, int err, const char* fmt, ...) {
  if (level < g_level) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err != 0) {
    fprintf(stderr, "%s: %s: %s: %s\n", g_name, LevelName(level), msg, strerror(err));
  } else {
    fprintf(stderr, "%s: %s: %s\n", g_name, LevelName(level), msg);
  }
  fflush(stderr);
}

void RawWrite(const char* a, const char* b, const char* c) {
  for (const char* s : {a, b, c}) {
    if (s == nullptr) continue;
    size_t n = strlen(s);
    while (n > 0) {
      ssize_t w = ::write(2, s, n);
      if (w <= 0) return;
      s += w;
      n -= static_cast<size_t>(w);
    }
  }
}

}  // namespace skillmcp::log
