#include "broker/confirm/spent_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "broker/harden/state_dir.h"

namespace skillmcp {
namespace {

std::string ErrnoText(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string RecordName(const TokenNonce& nonce, int64_t expiry) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name;
  for (unsigned char b : nonce) {
    name += kHex[b >> 4];
    name += kHex[b & 15];
  }
  return name + "-" + std::to_string(expiry);
}

// The expiry in a record's name, nullopt for any other name (left alone).
std::optional<int64_t> RecordExpiry(std::string_view name) {
  if (name.size() < 34 || name.size() > 54 || name[32] != '-') return std::nullopt;
  for (size_t i = 0; i < 32; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  }
  int64_t expiry = 0;
  for (size_t i = 33; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || expiry > (INT64_MAX - 9) / 10) return std::nullopt;
    expiry = expiry * 10 + (name[i] - '0');
  }
  return expiry;
}

}  // namespace

SpentDir::Opened SpentDir::Open(const std::string& base,
                                std::initializer_list<std::string_view> subdirs) {
  Opened out;
  std::vector<std::string> steps(subdirs.begin(), subdirs.end());
  steps.emplace_back(kSpentSubdir);
  // The walk from "/", every directory checked (broker/harden/state_dir.h).
  OpenedStateDir opened = OpenStateSubdir(base, steps);
  if (!opened.fd) {
    out.error = opened.error;
    return out;
  }
  out.dir.reset(new SpentDir(std::move(opened.fd), opened.path));
  return out;
}

SpentDir::State SpentDir::Lookup(const TokenNonce& nonce, int64_t expiry, std::string* error) {
  struct stat st {};
  const std::string name = RecordName(nonce, expiry);
  if (fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return State::kSpent;
  if (errno == ENOENT) return State::kUnspent;
  *error = ErrnoText("cannot look for the spent record in " + path_, errno);
  return State::kFailed;
}

SpentDir::State SpentDir::Record(const TokenNonce& nonce, int64_t expiry, int64_t now,
                                 std::string* error) {
  MaybePrune(now);
  if (live_ >= max_live_) {
    // Prune early, in case other brokers' records have lapsed; why at most every few
    // seconds: while full, every refused spend would otherwise rescan the whole directory.
    if (now - last_prune_ >= kFullPruneEverySeconds) {
      last_prune_ = 0;
      MaybePrune(now);
    }
    if (live_ >= max_live_) return State::kFull;
  }
  const std::string name = RecordName(nonce, expiry);
  // Why O_EXCL: the one atomic test-and-set every broker on the host agrees on.
  UniqueFd fd(
      openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == EEXIST) return State::kSpent;
    *error = ErrnoText("cannot record the spent token in " + path_, errno);
    return State::kFailed;
  }
  ++live_;
  return State::kUnspent;
}

void SpentDir::MaybePrune(int64_t now) {
  if (last_prune_ != 0 && now - last_prune_ < kPruneEverySeconds) return;
  last_prune_ = now;
  int copy = fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return;
  DIR* dir = fdopendir(copy);
  if (dir == nullptr) {
    close(copy);
    return;
  }
  // The copy shares the directory offset with fd_: start from the top every time.
  rewinddir(dir);
  size_t live = 0;
  while (struct dirent* e = readdir(dir)) {
    std::optional<int64_t> expiry = RecordExpiry(e->d_name);
    if (!expiry) continue;
    // Why the grace: see kPruneGraceSeconds; an expired token is refused anyway.
    if (*expiry <= now - kPruneGraceSeconds) {
      unlinkat(fd_.get(), e->d_name, 0);
    } else {
      ++live;
    }
  }
  closedir(dir);
  live_ = live;
}

SpentDir::Opened OpenSpentDirFromEnv(const GetFn& get, const HostStateDefault& host) {
  StateBase b = ResolveStateBase(get, host);
  if (b.base.empty()) {
    SpentDir::Opened out;
    out.error = !b.error.empty() ? b.error
                                 : "no directory to record spent confirmation tokens in: set "
                                   "SKILL_MCP_STATE_DIR (or run under the systemd unit, or as "
                                   "root, or with XDG_RUNTIME_DIR set)";
    return out;
  }
  // XDG_RUNTIME_DIR is shared with the user's other programs: ours is a subdirectory.
  return b.subdirs.empty() ? SpentDir::Open(b.base, {}) : SpentDir::Open(b.base, {"skill-mcp"});
}

}  // namespace skillmcp
