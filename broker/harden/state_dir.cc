#include "broker/harden/state_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "shared/mountinfo.h"
#include "shared/small_file.h"

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
  if (!S_ISDIR(st.st_mode)) return path + " is not a directory";
  if (!OwnedByUsOrRoot(st)) return NotOurs(st, path);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return path + " can be written by other users and is not sticky, so it is not trusted";
  }
  return "";
}

// The state directory and the ones made in it. Why no sticky exception: another user
// able to create entries here could plant a record, a lock or a link under its name.
std::string CheckOwn(const struct stat& st, const std::string& path) {
  if (!OwnedByUsOrRoot(st)) return NotOurs(st, path);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return path + " can be written by other users, so it is not trusted";
  }
  return "";
}

// openat(O_NOFOLLOW) one directory below `parent`, optionally creating it, and check it.
UniqueFd OpenChecked(int parent, const std::string& name, const std::string& path, bool create,
                     bool own, int flags, std::string* error) {
  if (create && mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = ErrnoText("cannot create " + path, errno);
    return UniqueFd();
  }
  UniqueFd fd(openat(parent, name.c_str(), flags));
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

bool Beneath(const std::string& path, std::string_view dir) {
  return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

// The mount point of the mountinfo line that holds `path` most specifically, and its root.
bool MountOf(std::string_view mountinfo, std::string_view mount_point, std::string* root) {
  bool found = false;
  for (const MountInfoEntry& e : ParseMountInfo(mountinfo)) {
    if (e.mount_point != mount_point) continue;
    *root = std::string(e.root);  // the last one wins: it is the one on top
    found = true;
  }
  return found;
}

// A directory above the host-wide default, walked as root. Why stricter than
// CheckAncestor (no sticky exception): a root broker creates the directory every broker
// of the host trusts, so nobody but root may be able to touch the path to it.
std::string CheckRootOnly(const struct stat& st, const std::string& path) {
  if (!S_ISDIR(st.st_mode)) return path + " is not a directory";
  if (st.st_uid != 0) return path + " belongs to uid " + std::to_string(st.st_uid) + ", not root";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return path + " can be written by others than root";
  return "";
}

std::string ModeText(mode_t mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// The last component of the host-wide default, opened (made first when missing) beneath
// `parent`; `error` on any doubt.
UniqueFd OpenHostLeaf(int parent, const std::string& name, const std::string& path, uid_t uid,
                      gid_t gid, std::string* error) {
  const bool made = mkdirat(parent, name.c_str(), 0700) == 0;
  if (!made && errno != EEXIST) {
    *error = ErrnoText("cannot create " + path, errno);
    return UniqueFd();
  }
  UniqueFd fd(openat(parent, name.c_str(), kDirFlags));
  if (!fd) {
    *error = ErrnoText("cannot open " + path + " (it must be a directory, not a link)", errno);
    return UniqueFd();
  }
  // Why fchown on the descriptor: only root can write the parent, so what was made is ours.
  if (made && (fchown(fd.get(), uid, gid) != 0 || fchmod(fd.get(), 0700) != 0)) {
    *error = ErrnoText("cannot give " + path + " to the service user", errno);
    return UniqueFd();
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    *error = ErrnoText("cannot inspect " + path, errno);
    return UniqueFd();
  }
  // Why refuse rather than repair: a directory someone else owns or opened up may hold
  // planted locks or records; the operator decides (systemd's StateDirectory= would chown).
  if (st.st_uid != uid || (st.st_mode & 07777) != 0700) {
    *error = path + " belongs to uid " + std::to_string(st.st_uid) + " with mode " +
             ModeText(st.st_mode) + ", not to the service uid " + std::to_string(uid) +
             " with mode 0700, so it is not used; chown and chmod it, or set "
             "SKILL_MCP_STATE_DIR";
    return UniqueFd();
  }
  return fd;
}

}  // namespace

std::optional<std::string> UnitStateDirectory(const StateGetFn& get) {
  std::optional<std::string> dir = get("STATE_DIRECTORY");
  if (!dir) return std::nullopt;
  // It may list several directories separated by ':'; the first is ours.
  std::string first = dir->substr(0, dir->find(':'));
  // Why only ".../skill-mcp": a broker started by another service inherits that service's
  // $STATE_DIRECTORY; taking it would split the host's uid pool and spent-token record
  // from the unit's (StateDirectory=skill-mcp). SKILL_MCP_STATE_DIR names any other.
  const size_t slash = first.find_last_of('/');
  if (slash == std::string::npos || first.substr(slash + 1) != "skill-mcp") return std::nullopt;
  return first;
}

bool NeedsHostStateDefault(const StateGetFn& get) {
  return !get("SKILL_MCP_STATE_DIR") && !UnitStateDirectory(get);
}

HostStateDefault PrepareHostStateDir(const std::string& path, uid_t uid, gid_t gid) {
  HostStateDefault out;
  out.applies = true;
  const std::vector<std::string> parts = Components(path);
  if (path.empty() || path[0] != '/' || parts.empty()) {
    out.error = "the host-wide state directory \"" + path + "\" is not an absolute path";
    return out;
  }
  UniqueFd fd(open("/", kPathFlags));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    out.error = ErrnoText("cannot open /", errno);
    return out;
  }
  out.error = CheckRootOnly(st, "/");
  std::string at;
  for (size_t i = 0; out.error.empty() && i + 1 < parts.size(); ++i) {
    at += "/" + parts[i];
    fd = UniqueFd(openat(fd.get(), parts[i].c_str(), kPathFlags));
    if (!fd || fstat(fd.get(), &st) != 0) {
      out.error = ErrnoText("cannot open " + at + " (it must be a directory, not a link)", errno);
    } else {
      out.error = CheckRootOnly(st, at);
    }
  }
  if (out.error.empty()) OpenHostLeaf(fd.get(), parts.back(), path, uid, gid, &out.error);
  if (!out.error.empty()) {
    out.error = "the host-wide state directory is refused: " + out.error;
    return out;
  }
  out.path = path;
  return out;
}

StateBase ResolveStateBase(const StateGetFn& get, const HostStateDefault& host) {
  StateBase b;
  if (std::optional<std::string> dir = get("SKILL_MCP_STATE_DIR")) {
    b.base = *dir;
    b.from = "SKILL_MCP_STATE_DIR";
  } else if (std::optional<std::string> dir = UnitStateDirectory(get)) {
    // systemd's StateDirectory= (the unit sets it): kept across restarts and reboots.
    b.base = *dir;
    b.from = "STATE_DIRECTORY";
  } else if (host.applies) {
    // Why before XDG_RUNTIME_DIR: a root stdio broker shares the unit's pool of run uids
    // and its spent-token record, not a per-login directory (docs/isolation.md).
    b.base = host.path;
    b.from = "the host-wide default " + std::string(kHostStateDir);
    b.error = host.error;
  } else if (std::optional<std::string> dir = get("XDG_RUNTIME_DIR")) {
    b.base = *dir;
    b.subdirs = {"skill-mcp"};
    b.from = "XDG_RUNTIME_DIR";
  }
  return b;
}

OpenedStateDir OpenStateSubdir(const std::string& base, const std::vector<std::string>& subdirs) {
  OpenedStateDir out;
  if (base.empty() || base[0] != '/') {
    out.error = "the state directory \"" + base + "\" is not an absolute path";
    return out;
  }
  char resolved[PATH_MAX];
  if (realpath(base.c_str(), resolved) == nullptr) {
    out.error = ErrnoText("cannot resolve the state directory " + base, errno);
    return out;
  }
  std::vector<std::pair<std::string, bool>> steps;  // name, create
  for (const std::string& p : Components(resolved)) steps.emplace_back(p, false);
  const size_t base_index = steps.size();
  if (base_index == 0) {
    out.error = "the state directory must not be /";
    return out;
  }
  for (const std::string& s : subdirs) steps.emplace_back(s, true);
  // Why walk from "/", and check "/" itself: every directory on the way must be trusted.
  UniqueFd fd(open("/", kPathFlags));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    out.error = ErrnoText("cannot open /", errno);
    return out;
  }
  if (std::string bad = CheckAncestor(st, "/"); !bad.empty()) {
    out.error = bad;
    return out;
  }
  std::string path;
  for (size_t i = 0; i < steps.size(); ++i) {
    path += "/" + steps[i].first;
    // The state directory itself and everything made in it must be ours alone to write.
    const bool own = i + 1 >= base_index;
    const int flags = i + 1 == steps.size() ? kDirFlags : kPathFlags;
    fd = OpenChecked(fd.get(), steps[i].first, path, steps[i].second, own, flags, &out.error);
    if (!fd) return out;
  }
  out.fd = std::move(fd);
  out.path = path;
  return out;
}

OpenedStateDir OpenStateDirFromEnv(const StateGetFn& get,
                                   std::initializer_list<std::string_view> leaf,
                                   const HostStateDefault& host) {
  StateBase b = ResolveStateBase(get, host);
  if (b.base.empty()) {
    OpenedStateDir out;
    out.error = !b.error.empty()
                    ? b.error
                    : "no state directory: set SKILL_MCP_STATE_DIR (or run under the systemd "
                      "unit, or as root, or with XDG_RUNTIME_DIR set)";
    return out;
  }
  for (std::string_view l : leaf) b.subdirs.emplace_back(l);
  return OpenStateSubdir(b.base, b.subdirs);
}

std::string PrivateTmpProblem(const std::string& path, std::string_view mountinfo,
                              std::optional<bool> host_tmp_differs) {
  for (std::string_view tmp : {std::string_view("/tmp"), std::string_view("/var/tmp")}) {
    if (!Beneath(path, tmp)) continue;
    std::string root;
    const bool private_bind =
        MountOf(mountinfo, tmp, &root) && root.find("/systemd-private-") != std::string::npos;
    if (private_bind || (tmp == "/tmp" && host_tmp_differs.value_or(false))) {
      return path + " lies in this process's private " + std::string(tmp) +
             " (systemd PrivateTmp= or a private mount), so other brokers of the host do "
             "not share it; set SKILL_MCP_STATE_DIR to a directory outside " +
             std::string(tmp);
    }
  }
  return "";
}

std::string PrivateTmpProblemHere(const std::string& path) {
  std::string mountinfo;
  int err = 0;
  // why: unreadable mountinfo leaves only the /proc/1 comparison, never a guess of "shared".
  if (!ReadSmallFile("/proc/self/mountinfo", &mountinfo, &err)) mountinfo.clear();
  std::optional<bool> differs;
  struct stat here {
  }, host{};
  if (stat("/tmp", &here) == 0 && stat("/proc/1/root/tmp", &host) == 0)
    differs = here.st_dev != host.st_dev || here.st_ino != host.st_ino;
  return PrivateTmpProblem(path, mountinfo, differs);
}

}  // namespace skillmcp
