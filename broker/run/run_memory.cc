#include "broker/run/run_memory.h"

#include <dirent.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <unordered_set>
#include <utility>

#include "shared/mountinfo.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

constexpr size_t kStatusCap = 64 * 1024;    // status is about 1.5 KiB
constexpr size_t kChildrenCap = 64 * 1024;  // a pid list: bounded by nproc anyway

// The number after "Name:" on its own line of a /proc status text.
std::optional<uint64_t> Field(std::string_view text, std::string_view name) {
  size_t at = 0;
  for (;;) {
    at = text.find(name, at);
    if (at == std::string_view::npos) return std::nullopt;
    if ((at == 0 || text[at - 1] == '\n') && text.size() > at + name.size() &&
        text[at + name.size()] == ':')
      break;
    at += name.size();
  }
  size_t start = text.find_first_not_of(" \t", at + name.size() + 1);
  if (start == std::string_view::npos) return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(text.data() + start, text.data() + text.size(), v);
  if (r.ec != std::errc()) return std::nullopt;
  return v;
}

// The pids of one children file.
void ParsePids(std::string_view text, std::vector<pid_t>& out) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p < '0' || *p > '9')) ++p;
    pid_t v = 0;
    auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc()) break;
    if (v > 0) out.push_back(v);
    p = r.ptr;
  }
}

// The tids of /proc/<pid>/task; empty when the process is gone.
std::vector<std::string> Tasks(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

// Whether this process holds `cap` in its effective set; false when the sets cannot be
// read (why: an unknown capability is one not held, so hidepid reads as blindness).
bool HoldsEffective(cap_value_t cap) {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return false;
  cap_flag_value_t value = CAP_CLEAR;
  const bool held = cap_get_flag(caps, cap, CAP_EFFECTIVE, &value) == 0 && value == CAP_SET;
  cap_free(caps);
  return held;
}

}  // namespace

std::optional<ProcessMemory> ParseProcessMemory(std::string_view status) {
  std::optional<uint64_t> ppid = Field(status, "PPid");
  if (!ppid) return std::nullopt;
  ProcessMemory m;
  m.ppid = static_cast<pid_t>(*ppid);
  std::optional<uint64_t> anon = Field(status, "RssAnon");
  std::optional<uint64_t> shmem = Field(status, "RssShmem");
  // A zombie (or an exiting process) has no mm: no Rss lines.
  if (anon) {
    m.has_memory = true;
    m.bytes = (*anon + shmem.value_or(0)) * 1024;
  }
  return m;
}

RunMemorySample SampleRunMemory(const std::vector<pid_t>& roots, size_t max_visits,
                                const std::string& proc) {
  RunMemorySample s;
  // (pid, the parent it was found under; 0 for a root, whose pid cannot be reused)
  std::vector<std::pair<pid_t, pid_t>> to_visit;
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) to_visit.emplace_back(*it, 0);
  std::unordered_set<pid_t> counted;
  std::string text;
  std::vector<pid_t> kids;
  const pid_t first_root = roots.empty() ? 0 : roots.front();
  while (!to_visit.empty()) {
    auto [pid, parent] = to_visit.back();
    to_visit.pop_back();
    if (s.visits >= max_visits) {
      s.capped = true;
      break;
    }
    const std::string dir = proc + "/" + std::to_string(pid);
    int err = 0;
    ++s.visits;
    if (!ReadSmallFile((dir + "/status").c_str(), &text, &err, kStatusCap)) continue;  // gone
    std::optional<ProcessMemory> m = ParseProcessMemory(text);
    if (!m) continue;
    // why: only what descends from the run's known roots is the run's; a pid found under
    // a parent that is no longer its parent may be a stranger that reused it.
    if (parent != 0 && m->ppid != parent) continue;
    if (!counted.insert(pid).second) continue;  // re-parented mid-walk and seen before
    if (pid == first_root) s.root_seen = true;
    if (m->has_memory) {
      s.bytes += m->bytes;
      ++s.processes;
    }
    for (const std::string& tid : Tasks(dir + "/task")) {
      if (s.visits >= max_visits) {
        s.capped = true;
        break;
      }
      ++s.visits;
      kids.clear();
      if (!ReadSmallFile((dir + "/task/" + tid + "/children").c_str(), &text, &err, kChildrenCap))
        continue;
      ParsePids(text, kids);
      for (pid_t k : kids) to_visit.emplace_back(k, pid);
    }
    if (s.capped) break;
  }
  return s;
}

size_t RunMemoryVisitCap(uint64_t nproc) {
  return nproc > kRunMemoryMaxVisits / 2 ? kRunMemoryMaxVisits : static_cast<size_t>(2 * nproc);
}

int64_t NextRunMemorySampleMs(int64_t sample_ns) {
  if (sample_ns <= 0) return kRunMemorySampleMs;
  // 10 x the cost, rounded up to whole ms: the sampling's share of the loop stays <= 10 %.
  const int64_t ten_x_ms = (sample_ns / 100000 + (sample_ns % 100000 != 0 ? 1 : 0));
  return std::max(kRunMemorySampleMs, ten_x_ms);
}

RunMemoryVerdict JudgeRunMemory(const RunMemorySample& sample, uint64_t limit_bytes) {
  if (!sample.root_seen) return RunMemoryVerdict::kBlind;
  // why: an incomplete walk may have missed the heavy processes (a depth-first walk
  // reaches the oldest children last); a run too big to sample is not a run under limit.
  if (sample.capped) return RunMemoryVerdict::kTooMany;
  return sample.bytes > limit_bytes ? RunMemoryVerdict::kOver : RunMemoryVerdict::kUnder;
}

std::string ProcChildrenBlindness(const std::string& proc, pid_t tid) {
  struct stat st {};
  const std::string path = proc + "/self/task/" + std::to_string(tid) + "/children";
  if (stat(path.c_str(), &st) == 0) return "";
  return path + " does not exist (a kernel without CONFIG_PROC_CHILDREN, or gVisor), so the "
         "broker cannot find its runs' descendants; the unit's MemoryMax= or the container's "
         "memory limit bounds the connection instead";
}

std::string RunMemoryBlindness(std::string_view mountinfo, bool cap_sys_ptrace) {
  if (cap_sys_ptrace) return "";
  // The last /proc mount listed is the one on top, the one the broker reads.
  std::string_view options;
  bool found = false;
  for (const MountInfoEntry& e : ParseMountInfo(mountinfo)) {
    if (!e.has_fs || e.mount_point != "/proc" || e.fs_type != "proc") continue;
    options = e.super_options;
    found = true;
  }
  if (!found) return "";
  std::string_view value;
  for (size_t p = 0; p <= options.size();) {
    size_t comma = options.find(',', p);
    if (comma == std::string_view::npos) comma = options.size();
    std::string_view opt = options.substr(p, comma - p);
    if (opt.substr(0, 8) == "hidepid=") value = opt.substr(8);
    p = comma + 1;
  }
  if (value.empty() || value == "0" || value == "off") return "";
  return "/proc is mounted with hidepid=" + std::string(value) +
         " (systemd's ProtectProc=) and the broker lacks CAP_SYS_PTRACE, so it cannot read "
         "its runs' processes; the unit's MemoryMax= or the container's memory limit bounds "
         "the connection instead";
}

std::string OwnRunMemoryBlindness() {
  // why: a /proc of another pid namespace would name other processes by our runs' pids.
  char self[32] = {};
  const ssize_t n = readlink("/proc/self", self, sizeof self - 1);
  if (n <= 0 || std::string(self, static_cast<size_t>(n)) != std::to_string(getpid()))
    return "the broker's /proc is not of its own pid namespace (/proc/self is not its pid), "
           "so it cannot find its runs' processes there";
  // why: without children files the walk sees the worker alone and counts nothing.
  if (std::string blind = ProcChildrenBlindness("/proc", gettid()); !blind.empty()) return blind;
  std::string mountinfo;
  int err = 0;
  if (!ReadSmallFile("/proc/self/mountinfo", &mountinfo, &err))
    return "/proc/self/mountinfo cannot be read, so whether the broker sees its runs' "
           "processes is unknown";
  return RunMemoryBlindness(mountinfo, HoldsEffective(CAP_SYS_PTRACE));
}

}  // namespace skillmcp
