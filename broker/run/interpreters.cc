#include "broker/run/interpreters.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "shared/path_prefix.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

const KnownInterpreter* Known(std::string_view name) {
  for (const KnownInterpreter& k : kKnownInterpreters)
    if (k.name == name) return &k;
  return nullptr;
}

std::string KnownList() {
  std::string out;
  for (const KnownInterpreter& k : kKnownInterpreters)
    out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "" when `dir` (resolved) is root's and writable by no group or other user, and so is
// every directory above it but for a root-owned sticky one (/tmp: nobody else may rename
// or remove what root put there), or why not. A missing `dir` passes: nothing is read
// from it. why: python reads its stdlib and dist-packages by path at every run, and a
// .pth file or a module dropped there by whoever may write runs before the confirmed bytes.
std::string CheckTrustedTree(const std::string& dir, std::string_view variable) {
  const std::string real = RealPath(dir);
  if (real.empty()) return "";
  std::string at = real;
  for (;;) {
    struct stat st {};
    if (lstat(at.c_str(), &st) != 0) return at + ": " + std::strerror(errno);
    const bool sticky_above = at != real && (st.st_mode & S_ISVTX) != 0;
    if (st.st_uid != 0 || (!sticky_above && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0))
      return at + " (above or holding what " + dir +
             " imports) is not root's alone: a user who may write there could change what "
             "every run imports; make it root's and writable by root only, or set " +
             std::string(variable) + " to an interpreter installed elsewhere";
    if (at == "/") return "";
    const size_t slash = at.rfind('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
}

// The directories python3 X.Y under `prefix` imports from by path (Debian's layout and
// the upstream one).
std::vector<std::string> PythonImportDirs(const std::string& prefix, const std::string& version) {
  const std::string base = prefix == "/" ? "" : prefix;
  std::vector<std::string> dirs = {base + "/lib/python3/dist-packages"};
  if (version.empty()) return dirs;
  const std::string lib = base + "/lib/python" + version;
  dirs.insert(dirs.end(), {lib, lib + "/lib-dynload", lib + "/site-packages",
                           base + "/local/lib/python" + version + "/dist-packages"});
  return dirs;
}

// The checks an interpreter other than node passes on its open descriptor, beyond
// OpenExecutable's. "" or why not.
std::string CheckInstalled(int fd, const std::string& path, std::string_view variable,
                           const std::vector<std::string>& private_places) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return path + ": " + std::strerror(errno);
  // why: a binary another user may write could be changed between runs into anything.
  if (st.st_uid != 0)
    return path + " is owned by uid " + std::to_string(st.st_uid) +
           ", not root; install it as root or set " + std::string(variable) + " to one that is";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return path + " is writable by its group or by others; remove that write permission or set " +
           std::string(variable) + " to another binary";
  // why: a script there (a pyenv or asdf shim, a wrapper) would exec an interpreter of
  // its own choosing at each run, which nobody pinned.
  unsigned char magic[4] = {};
  if (pread(fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic) ||
      std::memcmp(magic,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return path +
           " is not an ELF executable (a shim or wrapper script would run an "
           "interpreter nobody pinned); set " +
           std::string(variable) + " to the real binary, such as /usr/bin/python3";
  // why: the cell hides these places from a run, and what a user installs there is theirs
  // to change.
  for (const std::string& place : private_places)
    if (IsSameOrBeneath(path, place))
      return path + " is under " + place +
             ", a place runs do not see and a user may change; install it system-wide or "
             "set " +
             std::string(variable) + " to one outside it";
  return "";
}

}  // namespace

InterpreterNames ParseInterpreterNames(const std::optional<std::string>& value) {
  InterpreterNames out;
  if (!value) {
    out.names = {"node"};
    return out;
  }
  std::string_view rest = *value;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view name = Trim(rest.substr(0, comma));
    // why: a mistyped set must stop the boot, never silently serve another one.
    if (name.empty() || Known(name) == nullptr) {
      out.error =
          "SKILL_MCP_INTERPRETERS=\"" + *value + "\" " +
          (name.empty() ? std::string("has an empty entry")
                        : "names \"" + std::string(name) + "\", which this server cannot run") +
          "; set it to a comma-separated list of " + KnownList() + ", or unset it for node";
      out.names.clear();
      return out;
    }
    if (std::find(out.names.begin(), out.names.end(), name) != out.names.end()) {
      out.error = "SKILL_MCP_INTERPRETERS=\"" + *value + "\" names \"" + std::string(name) +
                  "\" twice; name each interpreter once";
      out.names.clear();
      return out;
    }
    out.names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string OpenExecutable(const std::string& path, UniqueFd* out) {
  // why: O_CLOEXEC so no other child ever inherits it; the worker gets it by dup2 only.
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return path + ": " + std::strerror(errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return path + ": " + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
  if ((st.st_mode & 0111) == 0) return path + " is not executable";
  *out = std::move(fd);
  return "";
}

std::string SearchPath(std::string_view path_value, std::string_view name) {
  size_t at = 0;
  while (at <= path_value.size()) {
    size_t colon = path_value.find(':', at);
    if (colon == std::string_view::npos) colon = path_value.size();
    std::string dir(path_value.substr(at, colon - at));
    at = colon + 1;
    // why: an empty or relative entry means "the cwd", which nobody pinned.
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = dir + "/" + std::string(name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

std::string PinInterpreter(const EnvStore& env, std::string_view name,
                           const std::vector<std::string>& private_places,
                           std::string_view default_path, PinnedInterpreter* out) {
  const KnownInterpreter* known = Known(name);
  if (known == nullptr) return std::string(name) + " is not an interpreter this server can run";
  const std::string variable(known->path_variable);
  out->name = std::string(name);
  out->kind = known->kind;
  std::optional<std::string> set = env.GetConfig(variable);
  const std::string given =
      set ? *set : SearchPath(env.GetConfig("PATH").value_or(std::string(default_path)), name);
  if (given.empty())
    return "no " + out->name + " was found on the broker's PATH; install " +
           std::string(known->package) + " or set " + variable;
  if (given[0] != '/') return variable + "=\"" + given + "\" is not an absolute path";
  // Resolved once, here: the chain of links is followed now and never again.
  out->path = RealPath(given);
  if (out->path.empty())
    return out->name + " at " + given + " cannot be resolved: " + std::strerror(errno);
  if (std::string e = OpenExecutable(out->path, &out->fd); !e.empty())
    return out->name + " cannot be used (" + e + ")";
  if (known->kind != InterpreterKind::kNode) {
    if (std::string e = CheckInstalled(out->fd.get(), out->path, variable, private_places);
        !e.empty()) {
      out->fd.reset();
      return out->name + " cannot be used (" + e + ")";
    }
  }
  out->dir = InterpreterInstallDir(out->path);
  out->version = known->kind == InterpreterKind::kPython3 ? VersionFromName(out->path) : "";
  if (known->kind != InterpreterKind::kNode) {
    // why: the prefix becomes a read-and-execute rule of every run; "/" would grant all.
    if (out->dir == "/") {
      out->fd.reset();
      return out->name + " cannot be used (" + out->path +
             " sits at the root, and its prefix would be the whole filesystem; install it "
             "under a prefix such as /usr)";
    }
    std::vector<std::string> trees = {out->path.substr(0, out->path.rfind('/'))};
    if (known->kind == InterpreterKind::kPython3) {
      for (std::string& d : PythonImportDirs(out->dir, out->version)) trees.push_back(std::move(d));
    }
    for (const std::string& tree : trees) {
      if (std::string e = CheckTrustedTree(tree, variable); !e.empty()) {
        out->fd.reset();
        return out->name + " cannot be used (" + e + ")";
      }
    }
  }
  return "";
}

std::string InterpreterInstallDir(const std::string& binary_path) {
  const size_t slash = binary_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  std::string dir = binary_path.substr(0, slash);
  // why: an interpreter installed under a prefix (/opt/node/bin/node) reads its own lib/
  // and share/ beside bin/; the prefix, not the whole parent tree, is allowed.
  if (dir.size() > 4 && dir.compare(dir.size() - 4, 4, "/bin") == 0) dir.resize(dir.size() - 4);
  return dir;
}

std::string VersionFromName(const std::string& binary_path) {
  const std::string base = binary_path.substr(binary_path.rfind('/') + 1);
  constexpr std::string_view kPrefix = "python";
  if (base.compare(0, kPrefix.size(), kPrefix) != 0) return "";
  const std::string rest = base.substr(kPrefix.size());
  if (rest.empty() || rest.find_first_not_of("0123456789.") != std::string::npos ||
      rest.front() == '.' || rest.back() == '.')
    return "";
  return rest;
}

std::string DescribeInterpreters(const std::vector<PinnedInterpreter>& pinned) {
  std::string out;
  for (const PinnedInterpreter& p : pinned) {
    out += (out.empty() ? "" : ", ") + p.name;
    if (!p.version.empty()) out += " " + p.version;
    out += " " + (p.path.empty() ? std::string("(not pinned)") : p.path);
  }
  return out;
}

}  // namespace skillmcp
