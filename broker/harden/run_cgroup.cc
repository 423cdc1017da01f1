#include "broker/harden/run_cgroup.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "shared/mountinfo.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool HasWord(std::string_view list, std::string_view word, char sep) {
  for (std::string_view w : Split(list, sep))
    if (w == word) return true;
  return false;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Join(const std::string& mount, const std::string& path) {
  return path == "/" || path.empty() ? mount : mount + path;
}

// "512 MiB" for a byte count; "" for no limit (v2 "max", v1's page-rounded 2^63).
std::string Bytes(const std::string& text) {
  if (text.empty() || text == "max") return "";
  char* end = nullptr;
  unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || v >= (1ULL << 62)) return "";
  return std::to_string(v >> 20) + " MiB";
}

// The first limit found from `dir` up to `root`, as "name value (at path)".
std::string FirstLimit(const std::string& root, std::string path, const char* file,
                       bool bytes, const TextReader& read) {
  for (;;) {
    std::string text;
    if (read(Join(root, path) + "/" + file, &text)) {
      std::string v = Trim(text);
      std::string shown = bytes ? Bytes(v) : (v == "max" ? "" : v);
      if (!shown.empty()) return std::string(file) + " " + shown + " (" + path + ")";
    }
    if (path == "/" || path.empty()) return "";
    size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
}

}  // namespace

CgroupFacts ReadCgroupFacts(std::string_view proc_cgroup, std::string_view mountinfo,
                            const TextReader& read, const WritableCheck& writable) {
  CgroupFacts f;
  std::string v2_mount, v1_memory_mount, v1_pids_mount;
  for (const MountInfoEntry& e : ParseMountInfo(mountinfo)) {
    if (!e.has_fs) continue;
    std::string point;
    DecodeMountInfoField(e.mount_point, &point);  // a stray backslash stays as it is
    if (e.fs_type == "cgroup2" && (v2_mount.empty() || point == "/sys/fs/cgroup")) {
      v2_mount = point;
    } else if (e.fs_type == "cgroup") {
      if (HasWord(e.super_options, "memory", ',')) v1_memory_mount = point;
      if (HasWord(e.super_options, "pids", ',')) v1_pids_mount = point;
    }
  }
  f.v1_memory_or_pids = !v1_memory_mount.empty() || !v1_pids_mount.empty();
  f.v2_mounted = !v2_mount.empty();

  std::string v1_memory_path, v1_pids_path;
  for (std::string_view line : Split(proc_cgroup, '\n')) {
    size_t a = line.find(':');
    size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string path(line.substr(b + 1));
    if (line.substr(0, a) == "0" && controllers.empty()) f.v2_path = path;
    if (HasWord(controllers, "memory", ',')) v1_memory_path = path;
    if (HasWord(controllers, "pids", ',')) v1_pids_path = path;
  }

  std::vector<std::string> bounds;
  if (f.v2_mounted && !f.v2_path.empty() && !f.v1_memory_or_pids) {
    std::string dir = Join(v2_mount, f.v2_path);
    std::string controllers;
    f.v2_controllers = read(dir + "/cgroup.controllers", &controllers) &&
                       HasWord(Trim(controllers), "memory", ' ') &&
                       HasWord(Trim(controllers), "pids", ' ');
    f.v2_delegated = f.v2_controllers && writable(dir) &&
                     writable(dir + "/cgroup.subtree_control");
    bounds.push_back(FirstLimit(v2_mount, f.v2_path, "memory.max", true, read));
    bounds.push_back(FirstLimit(v2_mount, f.v2_path, "pids.max", false, read));
  } else {
    if (!v1_memory_mount.empty() && !v1_memory_path.empty())
      bounds.push_back(
          FirstLimit(v1_memory_mount, v1_memory_path, "memory.limit_in_bytes", true, read));
    if (!v1_pids_mount.empty() && !v1_pids_path.empty())
      bounds.push_back(FirstLimit(v1_pids_mount, v1_pids_path, "pids.max", false, read));
  }
  for (const std::string& b : bounds) {
    if (b.empty()) continue;
    f.connection_bound += (f.connection_bound.empty() ? "" : ", ") + b;
  }
  return f;
}

CgroupFacts ReadOwnCgroupFacts() {
  TextReader read = [](const std::string& path, std::string* text) {
    int err = 0;
    return ReadSmallFile(path.c_str(), text, &err);
  };
  WritableCheck writable = [](const std::string& path) {
    return access(path.c_str(), W_OK) == 0;
  };
  std::string cgroup, mountinfo;
  read("/proc/self/cgroup", &cgroup);
  read("/proc/self/mountinfo", &mountinfo);
  return ReadCgroupFacts(cgroup, mountinfo, read, writable);
}

std::string RunCgroupReason(const CgroupFacts& f, bool own_uid_per_run) {
  std::string why;
  if (f.v1_memory_or_pids) {
    why = "this host binds the memory and pids controllers to cgroup v1 (a hybrid or legacy "
          "hierarchy), so no cgroup v2 tree can hold a run's memory.max and pids.max";
  } else if (!f.v2_mounted || f.v2_path.empty()) {
    why = "no cgroup v2 hierarchy is mounted";
  } else if (!f.v2_controllers) {
    why = "the broker's cgroup v2 " + f.v2_path +
          " does not offer the memory and pids controllers";
  } else if (!f.v2_delegated) {
    why = "the broker's cgroup v2 " + f.v2_path +
          " is not delegated to it (systemd Delegate=yes, or a container with a private, "
          "writable cgroup namespace)";
  } else {
    why = "a delegated cgroup v2 tree is here (" + f.v2_path +
          "), but skill-mcp builds no per-run cgroups: no test environment of the project "
          "has such a tree";
  }
  // why two wordings: RLIMIT_NPROC counts per real uid, so it bounds one run only where
  // each run has its own uid (docs/isolation.md, "Own identity per run").
  std::string instead =
      own_uid_per_run
          ? "; a run is bounded per process by the prlimits, and its process count by nproc, "
            "which counts the processes of the run's own uid (run-identity on); the connection "
          : "; a run is bounded per process by the prlimits; nproc counts the processes of the "
            "uid every run shares (run-identity off), so it bounds all runs together, not each "
            "one; the connection ";
  instead += f.connection_bound.empty()
                 ? "has no memory or task limit in its cgroup (set MemoryMax= and TasksMax= "
                   "in the unit, or --memory and --pids-limit for a container)"
                 : "by its cgroup: " + f.connection_bound;
  return "no per-run cgroup: " + why + instead;
}

}  // namespace skillmcp
