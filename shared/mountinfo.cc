#include "shared/mountinfo.h"

#include "shared/lines.h"

namespace skillmcp {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

// The next space-separated field of `*rest` (up to a space or its end), taken off it with
// that space.
std::string_view TakeField(std::string_view* rest) {
  const size_t sp = rest->find(' ');
  std::string_view field = rest->substr(0, sp);
  rest->remove_prefix(sp == std::string_view::npos ? rest->size() : sp + 1);
  return field;
}

}  // namespace

bool ParseMountInfoLine(std::string_view line, MountInfoEntry* out) {
  *out = MountInfoEntry{};
  std::string_view* head[5] = {&out->mount_id, &out->parent_id, &out->major_minor, &out->root,
                               &out->mount_point};
  size_t pos = 0;  // where the next field starts
  for (int n = 0; n < 5; ++n) {
    if (pos > line.size()) return false;
    size_t sp = line.find(' ', pos);
    if (sp == std::string_view::npos) sp = line.size();
    *head[n] = line.substr(pos, sp - pos);
    pos = sp + 1;
  }
  const size_t head_end = pos - 1;  // the space after the mount point, or the line's end
  // why the first " - " of the line: no field holds a space, so it can only be the
  // separator; one inside the first five fields is a line to leave alone.
  const size_t sep = line.find(" - ");
  const size_t options_end = sep == std::string_view::npos || sep < head_end ? line.size() : sep;
  if (head_end < options_end) {
    std::string_view rest = line.substr(head_end + 1, options_end - head_end - 1);
    out->mount_options = TakeField(&rest);
  }
  if (sep == std::string_view::npos || sep < head_end) return true;
  const std::string_view tail = line.substr(sep + 3);
  const size_t a = tail.find(' ');
  const size_t b = a == std::string_view::npos ? a : tail.find(' ', a + 1);
  if (b == std::string_view::npos) return true;
  out->has_fs = true;
  out->fs_type = tail.substr(0, a);
  out->source = tail.substr(a + 1, b - a - 1);
  std::string_view rest = tail.substr(b + 1);
  out->super_options = TakeField(&rest);
  return true;
}

std::vector<MountInfoEntry> ParseMountInfo(std::string_view text) {
  std::vector<MountInfoEntry> out;
  MountInfoEntry e;
  for (std::string_view line : Lines(text))
    if (ParseMountInfoLine(line, &e)) out.push_back(e);
  return out;
}

bool DecodeMountInfoField(std::string_view field, std::string* out) {
  out->clear();
  bool ok = true;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\') {
      if (i + 3 < field.size() && IsOctal(field[i + 1]) && IsOctal(field[i + 2]) &&
          IsOctal(field[i + 3])) {
        out->push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                         (field[i + 3] - '0')));
        i += 3;
        continue;
      }
      ok = false;
    }
    out->push_back(field[i]);
  }
  return ok;
}

}  // namespace skillmcp
