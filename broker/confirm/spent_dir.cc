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

namespace skillmcp {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// On the way down only search permission is needed (a 0711 directory is fine).
constexpr int kPathFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

std::string ErrnoText(const std::string& what, int err) { return what + ": " + std::strerror(err); }

bool OwnedByUsOrRoot(const struct stat& st) { return st.st_uid == 0 || st.st_uid == geteuid(); }

std::string NotOurs(const struct stat& st, const std::string& path) {
  return path + " belongs to another user (uid " + std::to_string(st.st_uid) +
         "), so it is not trusted";
}

// A directory on the way to the state directory. Why: whoever can write a directory can
// replace what lies beneath it, unless the sticky bit stops them renaming our entries
// (as in /tmp); an owner other than root or us could do anything.
std::string CheckAncestor(const struct stat& st, const std::string& path) {
  if (!OwnedByUsOrRoot(st)) return NotOurs(st, path);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return path + " can be written by other users and is not sticky, so it is not trusted";
  }
  return "";
}

// The state directory and the ones made in it. Why no sticky exception: another user
// able to create entries here could plant a record or a link under a nonce's name.
std::string CheckOwn(const struct stat& st, const std::string& path) {
  if (!OwnedByUsOrRoot(st)) return NotOurs(st, path);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return path + " can be written by other users, so it is not trusted";
  }
  return "";
}

// openat(O_NOFOLLOW) one directory below `parent`, optionally creating it, and check it.
UniqueFd OpenChecked(int parent, std::string_view name, const std::string& path, bool create,
                     bool own, int flags, std::string* error) {
  std::string n(name);
  if (create && mkdirat(parent, n.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = ErrnoText("cannot create " + path, errno);
    return UniqueFd();
  }
  UniqueFd fd(openat(parent, n.c_str(), flags));
  if (!fd) {
    *error = ErrnoText("cannot open " + path + " (it must be a directory, not a link)", errno);
    return UniqueFd();
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    *error = ErrnoText("cannot inspect " + path, errno);
    return UniqueFd();
  }
  *error = own ? CheckOwn(st, path) : CheckAncestor(st, path);
  if (!error->empty()) return UniqueFd();
  return fd;
}

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

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
  if (base.empty() || base[0] != '/') {
    out.error = "the state directory \"" + base + "\" is not an absolute path";
    return out;
  }
  char resolved[PATH_MAX];
  if (realpath(base.c_str(), resolved) == nullptr) {
    out.error = ErrnoText("cannot resolve the state directory " + base, errno);
    return out;
  }
  // Why walk from "/": every directory on the way must be trusted, not only the last one.
  UniqueFd fd(open("/", kPathFlags));
  std::string path;
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    out.error = ErrnoText("cannot open /", errno);
    return out;
  }
  std::vector<std::string> parts = Components(resolved);
  std::vector<std::pair<std::string, bool>> steps;  // name, create
  for (const std::string& p : parts) steps.emplace_back(p, false);
  const size_t base_index = steps.size();
  for (std::string_view s : subdirs) steps.emplace_back(std::string(s), true);
  steps.emplace_back(std::string(kSpentSubdir), true);
  if (base_index == 0) {
    out.error = "the state directory must not be /";
    return out;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    path += "/" + steps[i].first;
    // The state directory itself and everything made in it must be ours alone to write.
    const bool own = i + 1 >= base_index;
    const int flags = i + 1 == steps.size() ? kDirFlags : kPathFlags;
    fd = OpenChecked(fd.get(), steps[i].first, path, steps[i].second, own, flags, &out.error);
    if (!fd) return out;
  }
  out.dir.reset(new SpentDir(std::move(fd), path));
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
  if (live_ >= kMaxSharedSpent) {
    // Prune early, in case other brokers' records have lapsed; why at most every few
    // seconds: while full, every refused spend would otherwise rescan the whole directory.
    if (now - last_prune_ >= kFullPruneEverySeconds) {
      last_prune_ = 0;
      MaybePrune(now);
    }
    if (live_ >= kMaxSharedSpent) return State::kFull;
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

SpentDir::Opened OpenSpentDirFromEnv(const GetFn& get) {
  if (std::optional<std::string> dir = get("SKILL_MCP_STATE_DIR")) return SpentDir::Open(*dir, {});
  // systemd's StateDirectory= (the unit sets it): kept across restarts and reboots.
  if (std::optional<std::string> dir = get("STATE_DIRECTORY")) {
    // STATE_DIRECTORY may list several directories separated by ':'; the first is ours.
    return SpentDir::Open(dir->substr(0, dir->find(':')), {});
  }
  if (std::optional<std::string> dir = get("XDG_RUNTIME_DIR")) {
    return SpentDir::Open(*dir, {"skill-mcp"});
  }
  SpentDir::Opened out;
  out.error =
      "no directory to record spent confirmation tokens in: set SKILL_MCP_STATE_DIR (or run "
      "under the systemd unit, or with XDG_RUNTIME_DIR set)";
  return out;
}

}  // namespace skillmcp
