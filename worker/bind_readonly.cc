#include "worker/bind_readonly.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>

#include "shared/lines.h"
#include "shared/mountinfo.h"
#include "shared/path_prefix.h"
#include "shared/small_file.h"

namespace skillmcp::worker {
namespace {

constexpr unsigned long kTmpFlags = MS_NOSUID | MS_NODEV;
// statvfs(3)'s ST_NOSYMFOLLOW (Linux 5.10), which glibc 2.36's headers do not name.
constexpr unsigned long kStNoSymfollow = 0x2000;

// The flags a read-only remount of a bind of `fd` must keep. why: a user namespace may
// not clear the nosuid, nodev, noexec or atime settings of a mount it received (EPERM);
// the atime mode is named explicitly, since a remount naming only nodiratime would turn
// a strictatime source into relatime, which the kernel refuses. nosymfollow is not
// locked, but a remount that omitted it would silently let the run follow symlinks there.
unsigned long KeptMountFlags(int fd) {
  struct statvfs vfs {};
  if (fstatvfs(fd, &vfs) != 0) return 0;
  unsigned long flags = 0;
  if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  if (!(vfs.f_flag & (ST_NOATIME | ST_RELATIME))) flags |= MS_STRICTATIME;
  if (vfs.f_flag & kStNoSymfollow) flags |= MS_NOSYMFOLLOW;
  return flags;
}

}  // namespace

int RemountBindReadOnly(const std::string& path, int fd) {
  const unsigned long ro = MS_REMOUNT | MS_BIND | MS_RDONLY | kTmpFlags | KeptMountFlags(fd);
  return mount(nullptr, path.c_str(), nullptr, ro, nullptr) == 0 ? 0 : errno;
}

bool HasMountBeneath(std::string_view mountinfo, std::string_view path, bool* ok) {
  *ok = true;
  std::string point;
  MountInfoEntry e;
  for (std::string_view line : Lines(mountinfo)) {
    if (line.empty()) continue;
    if (!ParseMountInfoLine(line, &e) || e.mount_point.empty() ||
        !DecodeMountInfoField(e.mount_point, &point)) {
      *ok = false;
      return false;
    }
    if (point != path && IsSameOrBeneath(point, path)) return true;
  }
  return false;
}

// why: the bind is MS_REC, so a mount inside a skill or a node_modules comes along, and a
// remount reaches only the top one: the run could write there. mount_setattr (Linux 5.12)
// only sets these, leaving each mount's locked atime, noexec and nosymfollow as they are.
// Where it is missing or filtered (an old kernel, a container's seccomp profile), a
// remount of the top mount is enough only when nothing is mounted beneath it; otherwise
// the view fails (EPERM). why not bind again without the mounts beneath: that drops the
// worker's own covers (a tmpfs over another skills root inside the skill directory) and
// shows what they hid. A mountinfo that cannot be read or parsed fails too.
int MakeBindReadOnly(const std::string& path, int fd) {
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (mount_setattr(AT_FDCWD, path.c_str(), AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr,
                    sizeof(attr)) == 0)
    return 0;
  if (errno != ENOSYS && errno != EPERM) return errno;
  std::string mountinfo;
  int err = 0;
  if (!ReadSmallFile("/proc/self/mountinfo", &mountinfo, &err)) return err != 0 ? err : EIO;
  bool ok = false;
  const bool beneath = HasMountBeneath(mountinfo, path, &ok);
  if (!ok) return EIO;
  if (beneath) return EPERM;
  return RemountBindReadOnly(path, fd);
}

}  // namespace skillmcp::worker
