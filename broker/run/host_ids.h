// Whether a run uid range stays clear of every id the host hands out (docs/isolation.md,
// "Own identity per run"). The uid probe (broker/run/uid_probe.h) cannot see a process of
// a uid in a user namespace another uid created: a rootful container or nspawn over the
// uid, a user's subordinate ids, a host user root maps into a namespace. So the range must
// hold no id the host's own users, groups or subordinate ranges use. The files are read
// directly, never through NSS (no network lookup at boot); ids an identity service maps
// (SSSD, winbind) are not in them, and the docs tell the operator to keep apart from those.
#pragma once

#include <string>
#include <string_view>

#include "broker/run/run_uids.h"

namespace skillmcp {

// The files read; tests inject fixtures.
struct HostIdFiles {
  std::string passwd = "/etc/passwd";
  std::string group = "/etc/group";
  std::string subuid = "/etc/subuid";
  std::string subgid = "/etc/subgid";
};

// Debian's system users (0-999) and regular users (1000-59999, up to 60000 in systemd's
// UIDS-GIDS document); nobody (65534) is refused by ParseRunUidRange already.
inline constexpr RunUidRange kHostUserIds{0, 60000};

// Pure: the first id in `range` of a passwd or group text, as "uid N (name)" (third
// field) or "gid N (name)" (a group's third field, a user's fourth); "" when none.
// Comments, NIS "+"/"-" lines and fields that are not decimal are skipped.
std::string PasswdIdInRange(std::string_view passwd, RunUidRange range);
std::string GroupIdInRange(std::string_view group, RunUidRange range);

// Pure: the first "name:start:count" line of a subuid or subgid text overlapping `range`,
// as "start-end of name"; "" when none.
std::string SubordinateRangeOverlapping(std::string_view text, RunUidRange range);

// "" when `range` is clear of kHostUserIds and of every entry of the four files, else the
// first clash, naming the file. A missing file holds nothing; any other read error is a
// clash (fail closed).
std::string RangeClashWithHostIds(RunUidRange range, const HostIdFiles& files);

}  // namespace skillmcp
