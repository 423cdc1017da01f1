// /proc/<pid>/mountinfo (proc_pid_mountinfo(5)), read by the broker's checks and the
// worker's read-only binds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skillmcp {

// One line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
// Every field is a view into the line as written, so root, mount_point and source keep
// their \ooo escapes (DecodeMountInfoField).
struct MountInfoEntry {
  std::string_view mount_id, parent_id, major_minor, root, mount_point;
  std::string_view mount_options;  // the sixth field; empty when the line stops before it
  // Whether the " - " separator follows the first five fields with the three fields after
  // it (the kernel always writes them); the three below are empty otherwise.
  bool has_fs = false;
  std::string_view fs_type, source, super_options;
};

// The first five space-separated fields of `line` and what follows them; false when the
// line has fewer than five (the fifth may be empty: "1 2 3 4 " has one).
bool ParseMountInfoLine(std::string_view line, MountInfoEntry* out);

// The entries of a mountinfo text, in order (the last one of a mount point is the one on
// top), each a view into `text`; lines ParseMountInfoLine refuses are left out.
std::vector<MountInfoEntry> ParseMountInfo(std::string_view text);

// `field` with the kernel's \ooo escapes (of space, tab, newline and backslash) decoded.
// A backslash not followed by three octal digits stays as it is in `out`, and makes the
// answer false.
bool DecodeMountInfoField(std::string_view field, std::string* out);

}  // namespace skillmcp
