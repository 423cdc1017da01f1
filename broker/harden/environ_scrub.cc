#include "broker/harden/environ_scrub.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "shared/small_file.h"
#include "shared/unique_fd.h"

namespace skillmcp {
namespace {

bool ParseHex(std::string_view s, uint64_t* v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string Errno(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// Zeroes the range through /proc/self/mem: a bad address gives an error, not a fault.
bool ZeroThroughProcMem(uint64_t start, uint64_t end, int* err) {
  UniqueFd mem(open("/proc/self/mem", O_RDWR | O_CLOEXEC));
  if (!mem.valid()) {
    *err = errno;
    return false;
  }
  std::vector<char> zeros(std::min<uint64_t>(end - start, 65536), 0);
  for (uint64_t at = start; at < end;) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(end - at, zeros.size()));
    ssize_t n = pwrite(mem.get(), zeros.data(), len, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = n < 0 ? errno : EIO;
      return false;
    }
    at += static_cast<uint64_t>(n);
  }
  return true;
}

bool AllNul(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; });
}

}  // namespace

bool ParseEnvRange(std::string_view stat, uint64_t* start, uint64_t* end) {
  size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return false;
  std::string_view rest = stat.substr(paren + 1);
  // Fields after the command name start at field 3 (state).
  int field = 2;
  uint64_t values[2] = {0, 0};
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    if (i >= rest.size()) break;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    ++field;
    if (field == 50 || field == 51) {
      std::string_view tok = rest.substr(i, j - i);
      auto r = std::from_chars(tok.data(), tok.data() + tok.size(), values[field - 50]);
      if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) return false;
    }
    if (field == 51) break;
    i = j;
  }
  if (field < 51 || values[0] == 0 || values[1] < values[0]) return false;
  *start = values[0];
  *end = values[1];
  return true;
}

bool RangeInWritableMapping(std::string_view maps, uint64_t start, uint64_t end) {
  while (!maps.empty()) {
    size_t nl = maps.find('\n');
    std::string_view line = maps.substr(0, nl);
    maps = nl == std::string_view::npos ? std::string_view() : maps.substr(nl + 1);
    // "lo-hi perms offset dev inode path"
    size_t dash = line.find('-');
    size_t sp = line.find(' ');
    if (dash == std::string_view::npos || sp == std::string_view::npos || dash > sp) continue;
    uint64_t lo = 0, hi = 0;
    if (!ParseHex(line.substr(0, dash), &lo) ||
        !ParseHex(line.substr(dash + 1, sp - dash - 1), &hi))
      continue;
    std::string_view perms = line.substr(sp + 1, 4);
    if (start >= lo && end <= hi) return perms.size() == 4 && perms[0] == 'r' && perms[1] == 'w';
  }
  return false;
}

// Order note (measured): once PR_SET_DUMPABLE is 0, /proc/self/mem and
// /proc/self/environ belong to root with mode 0600/0400, so a broker running as an
// ordinary uid can open neither (EACCES); root can. HardenProcess runs first in main
// (the flag must be off before anything secret is read), so this function does not
// depend on the order: it writes through /proc/self/mem when it can open it, else
// writes the range directly in its own address space after /proc/self/maps (still
// readable: 0444) shows it inside one writable mapping; and it verifies through
// /proc/self/environ when readable, else by reading the range back in memory.
ScrubResult ScrubEnviron() {
  ScrubResult r;
  std::string stat;
  int err = 0;
  if (!ReadSmallFile("/proc/self/stat", &stat, &err)) {
    r.detail = Errno("cannot read /proc/self/stat", err);
    return r;
  }
  uint64_t start = 0, end = 0;
  if (!ParseEnvRange(stat, &start, &end)) {
    r.detail = "cannot find env_start/env_end (fields 50-51) in /proc/self/stat";
    return r;
  }
  // why: the pointers into the block must go before the bytes do, so no getenv()
  // reads a half-wiped string; later code sees an empty environment.
  clearenv();
  static char* empty_environ[] = {nullptr};
  environ = empty_environ;

  std::string maps;
  bool maps_ok = ReadSmallFile("/proc/self/maps", &maps, &err);
  bool in_memory_ok = maps_ok && RangeInWritableMapping(maps, start, end);

  std::string how;
  int mem_err = 0;
  if (start == end) {
    how = "the block was already empty";
  } else if (ZeroThroughProcMem(start, end, &mem_err)) {
    how = "zeroed through /proc/self/mem";
  } else if (in_memory_ok) {
    // why: /proc/self/mem is root-owned once non-dumpable; the block is our own memory.
    explicit_bzero(reinterpret_cast<void*>(static_cast<uintptr_t>(start)), end - start);
    how = "zeroed in place (" + Errno("/proc/self/mem", mem_err) + ")";
  } else {
    r.detail = Errno("cannot zero the environ block through /proc/self/mem", mem_err) +
               ", and it is not inside one writable mapping";
    return r;
  }

  // With CAP_SYS_RESOURCE (a root start) the block is also cut to zero length, so
  // /proc/<pid>/environ reads as truly empty rather than as NUL bytes. Best effort:
  // the zeroing above is what protects the values.
  if (start != end && prctl(PR_SET_MM, PR_SET_MM_ENV_END, start, 0, 0) == 0)
    how += ", range cut to zero length";

  std::string back;
  if (ReadSmallFile("/proc/self/environ", &back, &err)) {
    r.ok = AllNul(back);
    r.detail = how + (r.ok ? "; /proc/self/environ reads empty"
                           : "; /proc/self/environ still shows bytes after the wipe");
    return r;
  }
  if (in_memory_ok) {
    std::string_view block(reinterpret_cast<const char*>(static_cast<uintptr_t>(start)),
                           end - start);
    r.ok = AllNul(block);
    r.detail =
        how + (r.ok ? "; verified in memory (/proc/self/environ is root-owned once non-dumpable)"
                    : "; the block still holds bytes after the wipe");
    return r;
  }
  r.detail = how + "; " + Errno("could not verify: /proc/self/environ", err);
  return r;
}

}  // namespace skillmcp
