#include "broker/run/run_uids.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "shared/lines.h"

namespace skillmcp {
namespace {

constexpr uint32_t kMaxRunUid = 2147483647u;  // below 2^31: see ParseRunUidRange

bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A whole-file lock request of `type`.
struct flock WholeFile(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  fl.l_pid = 0;  // F_OFD_* requires 0
  return fl;
}

}  // namespace

std::optional<RunUidRange> ParseRunUidRange(std::string_view text, std::string* why) {
  const size_t dash = text.find('-');
  RunUidRange r;
  if (dash == std::string_view::npos || !ParseU32(text.substr(0, dash), &r.first) ||
      !ParseU32(text.substr(dash + 1), &r.last)) {
    *why = "\"" + std::string(text) + "\" is not a range like 1879048192-1879113727";
    return std::nullopt;
  }
  if (r.first == 0 || r.first > r.last) {
    *why = "\"" + std::string(text) + "\" must go from a uid above 0 up to a uid not below it";
    return std::nullopt;
  }
  // why: uids from 2^31 up trouble devpts, setfsuid's return value and many programs
  // (systemd's UIDS-GIDS document reserves them); 65534 is nobody, 65535 the 16-bit -1.
  if (r.last > kMaxRunUid) {
    *why = "\"" + std::string(text) + "\" reaches 2147483648 or above; stay below 2^31";
    return std::nullopt;
  }
  if (r.contains(65534) || r.contains(65535)) {
    *why = "\"" + std::string(text) + "\" holds 65534 (nobody) or 65535; leave them out";
    return std::nullopt;
  }
  return r;
}

bool RangeMapped(std::string_view uid_map, RunUidRange range) {
  // Each line maps [inside, inside + count); the range must be covered by the union.
  uint64_t next = range.first;  // the lowest uid of the range not yet known to be covered
  bool progress = true;
  while (progress && next <= range.last) {
    progress = false;
    for (std::string_view line : Lines(uid_map)) {
      uint64_t f[3];
      int n = 0;
      size_t pos = 0;
      while (n < 3) {
        pos = line.find_first_not_of(' ', pos);
        if (pos == std::string_view::npos) break;
        size_t stop = line.find(' ', pos);
        if (stop == std::string_view::npos) stop = line.size();
        auto r = std::from_chars(line.data() + pos, line.data() + stop, f[n]);
        if (r.ec != std::errc() || r.ptr != line.data() + stop) break;
        ++n;
        pos = stop;
      }
      if (n != 3) continue;
      if (f[0] <= next && next < f[0] + f[2]) {
        next = f[0] + f[2];
        progress = true;
      }
    }
  }
  return next > range.last;
}

RunUidPool::Acquired RunUidPool::Acquire() {
  Acquired out;
  const uint64_t size = range_.size();
  // why random: the uid a run just left is seldom the next run's, so what it left behind
  // where no other layer reaches (docs/isolation.md) is not handed to the next run at once.
  const uint64_t start = size > 1 ? randombytes_uniform(static_cast<uint32_t>(size)) : 0;
  uint64_t held = 0, busy = 0;
  int probes = 0, last_err = 0;
  for (uint64_t i = 0; i < size && probes < kMaxProbesPerAcquire; ++i) {
    const uint32_t uid = static_cast<uint32_t>(range_.first + (start + i) % size);
    const std::string name = std::to_string(uid);
    // why O_RDWR: a write lock needs a writable descriptor; the file stays empty.
    UniqueFd fd(openat(dir_.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    struct stat st {};
    if (!fd || fstat(fd.get(), &st) != 0) {
      last_err = errno;
      continue;
    }
    // why: a lock file someone else owns or that is not a plain file could be a trap.
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
      last_err = EPERM;
      continue;
    }
    struct flock fl = WholeFile(F_WRLCK);
    // why F_OFD_SETLK, not SETLKW: the event loop never waits for another broker.
    if (fcntl(fd.get(), F_OFD_SETLK, &fl) != 0) {
      if (errno == EAGAIN || errno == EACCES) {
        ++held;
      } else {
        last_err = errno;
      }
      continue;
    }
    ++probes;
    // why: a free lock only says no live broker holds it; a run of a killed broker
    // may still have processes, and they keep the uid from every other run.
    if (in_use_(uid)) {
      ++busy;
      continue;  // closing the descriptor drops the lock
    }
    out.lease.emplace(uid, std::move(fd));
    return out;
  }
  out.error = "every uid of the run range " + std::to_string(range_.first) + "-" +
              std::to_string(range_.last) + " is taken (" + std::to_string(held) +
              " by running scripts or workers waiting for one, " + std::to_string(busy) +
              " by processes left from earlier runs";
  if (last_err != 0) out.error += std::string(", last error: ") + std::strerror(last_err);
  out.error += "); wait for a run to end, or widen SKILL_MCP_RUN_UIDS";
  return out;
}

uint64_t RunUidPool::CountHeld() const {
  int copy = openat(dir_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return 0;
  DIR* d = fdopendir(copy);
  if (d == nullptr) {
    close(copy);
    return 0;
  }
  uint64_t held = 0;
  while (dirent* e = readdir(d)) {
    uint32_t uid = 0;
    if (!ParseU32(e->d_name, &uid) || !range_.contains(uid)) continue;
    UniqueFd fd(openat(dir_.get(), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) continue;
    struct flock fl = WholeFile(F_WRLCK);
    // F_OFD_GETLK answers F_UNLCK when a write lock could be taken now.
    if (fcntl(fd.get(), F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) ++held;
  }
  closedir(d);
  return held;
}

}  // namespace skillmcp
