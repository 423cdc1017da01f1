#include "broker/run/host_ids.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "shared/small_file.h"

namespace skillmcp {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  for (;;) {
    const size_t colon = line.find(':', at);
    out.push_back(line.substr(at, colon == std::string_view::npos ? colon : colon - at));
    if (colon == std::string_view::npos) return out;
    at = colon + 1;
  }
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Calls fn(fields) for every line that is not empty, a comment or an NIS "+"/"-" line,
// until fn returns a non-empty text, which is returned.
template <typename Fn>
std::string EachEntry(std::string_view text, Fn fn) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') continue;
    if (std::string found = fn(Fields(line)); !found.empty()) return found;
  }
  return "";
}

bool Overlap(uint64_t first, uint64_t last, RunUidRange r) {
  return first <= r.last && last >= r.first;
}

// The file's text in `out`; false with the clash text in `why` when it cannot be read.
bool ReadIdFile(const std::string& path, const std::string& range, std::string* out,
                std::string* why) {
  int err = 0;
  if (ReadSmallFile(path.c_str(), out, &err)) return true;
  // why: a file that does not exist (no /etc/subuid in most images) lists no id; any
  // other failure leaves the range unchecked, which counts as a clash (fail closed).
  if (err == ENOENT) {
    out->clear();
    return true;
  }
  *why = range + " cannot be checked against " + path + " (" + std::strerror(err) + ")";
  return false;
}

// "kind N (name)" when field `at` of an entry is a decimal id in `range`, else "".
std::string IdFieldInRange(const std::vector<std::string_view>& f, size_t at, RunUidRange range,
                           std::string_view kind) {
  uint64_t id = 0;
  if (f.size() <= at || !ParseU64(f[at], &id) || !Overlap(id, id, range)) return "";
  return std::string(kind) + " " + std::to_string(id) + " (" + std::string(f[0]) + ")";
}

}  // namespace

std::string PasswdIdInRange(std::string_view passwd, RunUidRange range) {
  return EachEntry(passwd, [&](const std::vector<std::string_view>& f) {
    std::string found = IdFieldInRange(f, 2, range, "uid");
    return found.empty() ? IdFieldInRange(f, 3, range, "gid") : found;
  });
}

std::string GroupIdInRange(std::string_view group, RunUidRange range) {
  return EachEntry(group, [&](const std::vector<std::string_view>& f) {
    return IdFieldInRange(f, 2, range, "gid");
  });
}

std::string SubordinateRangeOverlapping(std::string_view text, RunUidRange range) {
  return EachEntry(text, [&](const std::vector<std::string_view>& f) -> std::string {
    uint64_t start = 0, count = 0;
    if (f.size() != 3 || !ParseU64(f[1], &start) || !ParseU64(f[2], &count) || count == 0)
      return "";
    const uint64_t last = start + count - 1;
    if (!Overlap(start, last, range)) return "";
    return std::to_string(start) + "-" + std::to_string(last) + " of " + std::string(f[0]);
  });
}

std::string RangeClashWithHostIds(RunUidRange range, const HostIdFiles& files) {
  const std::string text = std::to_string(range.first) + "-" + std::to_string(range.last);
  if (Overlap(kHostUserIds.first, kHostUserIds.last, range))
    return text + " overlaps 0-60000, the system and regular users of a Debian host";
  std::string content, why;
  if (!ReadIdFile(files.passwd, text, &content, &why)) return why;
  if (std::string e = PasswdIdInRange(content, range); !e.empty())
    return text + " holds " + e + " of " + files.passwd;
  if (!ReadIdFile(files.group, text, &content, &why)) return why;
  if (std::string e = GroupIdInRange(content, range); !e.empty())
    return text + " holds " + e + " of " + files.group;
  for (const std::string* path : {&files.subuid, &files.subgid}) {
    if (!ReadIdFile(*path, text, &content, &why)) return why;
    if (std::string e = SubordinateRangeOverlapping(content, range); !e.empty())
      return text + " overlaps the subordinate ids " + e + " in " + *path;
  }
  return "";
}

}  // namespace skillmcp
