#include "worker/namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/path_prefix.h"
#include "shared/unique_fd.h"
#include "worker/bind_readonly.h"
#include "worker/exec.h"
#include "worker/module_dir.h"
#include "worker/operator_dirs.h"

namespace skillmcp::worker {
namespace {

int WriteAll(int fd, const std::string& text) {
  ssize_t n = write(fd, text.data(), text.size());
  if (n < 0) return errno;
  return static_cast<size_t>(n) == text.size() ? 0 : EIO;
}

bool SameDirectory(const struct stat& a, const struct stat& b) {
  return S_ISDIR(a.st_mode) && S_ISDIR(b.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// mkdir -p for the components of `path` that do not exist; only ever reached beneath a
// tmpfs this worker mounted (elsewhere every component exists).
int MakeParents(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return errno;
  }
  return 0;
}

constexpr unsigned long kTmpFlags = MS_NOSUID | MS_NODEV;
StepResult MountFailed(int err) { return StepFailed(WorkerStep::kMountView, err); }

// Each module directory's path (in the spec) and the descriptor opened for it.
using OpenedDirs = std::vector<std::pair<const std::string*, UniqueFd>>;

// The directory a cover of `view` hides `path` in (the deepest), with `path` relative to
// it; null for a path no cover hides.
const PendingView::Hidden* HiddenBy(const PendingView& view, const std::string& path,
                                    std::string& rel) {
  const PendingView::Hidden* found = nullptr;
  for (const PendingView::Hidden& h : view.hidden) {
    if (!IsSameOrBeneath(path, h.path) || (found && found->path.size() >= h.path.size())) continue;
    found = &h;
  }
  if (found) rel = path.size() == found->path.size() ? "" : path.substr(found->path.size() + 1);
  return found;
}

// A directory of the host's view by its absolute path: where a cover hides it, beneath the
// descriptor the cover's directory was opened as before covering; elsewhere by its path,
// as visible in the view. No symlink is followed on any component either way. why: the
// broker's paths are real paths, so a link met was swapped in since, and a bind made
// writable (MCP_DATA_DIR) must not land on a directory a swapped link names.
UniqueFd OpenHostDir(const PendingView& view, const std::string& path) {
  std::string rel;
  if (const PendingView::Hidden* h = HiddenBy(view, path, rel))
    return OpenDirNoSymlinksBeneath(h->fd.get(), rel);
  return OpenDirNoSymlinks(path);
}

// The node_modules directories the Landlock rule allows (RunSpec::read_dirs), opened in
// the host's view (beneath a cover's descriptor where one hides them) with the Landlock
// rule's own checks (worker/module_dir.h): no symlink followed on any component, a
// directory others cannot write. why skipped: one that fails binds nothing, as it grants
// nothing.
int OpenModuleDirs(const RunSpec& spec, const PendingView& view, OpenedDirs& out) {
  for (const ModuleDir& dir : spec.read_dirs) {
    std::string rel;
    const PendingView::Hidden* h = dir.path.empty() ? nullptr : HiddenBy(view, dir.path, rel);
    if (h == nullptr) continue;  // beneath no cover: the host's own, left as it is
    UniqueFd fd = CheckModuleDir(OpenDirNoSymlinksBeneath(h->fd.get(), rel), dir);
    if (!fd.valid()) {
      if (IsSkippedModuleDirError(errno)) continue;
      return errno;
    }
    out.emplace_back(&dir.path, std::move(fd));
  }
  return 0;
}

// Binds each module directory a cover hid back, read-only, at its path. why only there:
// every component beneath a cover is this worker's own tmpfs, so nothing another process
// renames or links can redirect the bind; its source is the directory opened above, and
// the result is checked to be that same directory (else ESTALE).
int BindModuleDirs(const OpenedDirs& dirs) {
  for (const auto& [path, fd] : dirs) {
    struct stat opened {}, seen {};
    if (fstat(fd.get(), &opened) != 0) return errno;
    if (int e = MakeParents(*path); e != 0) return e;
    const std::string from = "/proc/self/fd/" + std::to_string(fd.get());
    if (mount(from.c_str(), path->c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
    // why read-only, nosuid, nodev: the Landlock rule grants reading only.
    if (int e = MakeBindReadOnly(*path, fd.get()); e != 0) return e;
    if (stat(path->c_str(), &seen) != 0) return errno;
    if (!SameDirectory(opened, seen)) return ESTALE;
  }
  return 0;
}

// Opens `dir` (O_PATH) and mounts an empty tmpfs over it; the descriptor still reaches
// what the cover hides. `data`: the tmpfs options.
int CoverKeepingFd(const std::string& dir, unsigned long flags, const char* data,
                   PendingView& view) {
  UniqueFd opened(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!opened.valid()) return errno;
  // why above the bootstrap's fd: a worker started ahead receives 6 and 7 with its
  // description later, and refuses them if those numbers are taken (EEXIST).
  UniqueFd fd(fcntl(opened.get(), F_DUPFD_CLOEXEC, kWorkerBootstrapFd + 1));
  if (!fd.valid()) return errno;
  if (mount("tmpfs", dir.c_str(), "tmpfs", flags, data) != 0) return errno;
  struct stat cover {};
  if (stat(dir.c_str(), &cover) != 0) return errno;
  view.hidden.push_back({dir, std::move(fd), cover.st_dev, cover.st_ino});
  return 0;
}

// The host files a run legitimately reads that may lead into a hidden place: the resolver
// and name-service configuration (with systemd-resolved, /etc/resolv.conf is a link into
// /run/systemd/resolve; with resolvconf, into /run/resolvconf) and the local time zone.
constexpr const char* kKeptEtcFiles[] = {"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                         "/etc/host.conf", "/etc/gai.conf", "/etc/localtime"};

// Where each of kKeptEtcFiles really is, resolved before any cover hides it; a name that
// is no link or does not resolve is left out (nothing to keep).
std::vector<std::string> ResolveKeptFiles() {
  std::vector<std::string> out;
  for (const char* name : kKeptEtcFiles) {
    char* real = realpath(name, nullptr);
    if (real == nullptr) continue;
    if (std::string_view(real) != name) out.emplace_back(real);
    free(real);
  }
  return out;
}

// Whether `path` is a cover's path or lies above one (a bind there would show what the
// cover hides).
bool HoldsACover(const PendingView& view, const std::string& path) {
  for (const PendingView::Hidden& h : view.hidden)
    if (IsSameOrBeneath(h.path, path)) return true;
  // A place beneath an earlier cover got no cover of its own (HOME under /home), yet a
  // bind of it would show it again.
  for (const std::string& place : view.hidden_roots)
    if (IsSameOrBeneath(place, path)) return true;
  return false;
}

// Binds the one regular file at `path`, which a cover of `view` hides, back at its path.
// why the file and never its directory: /run/systemd/resolve also holds resolved's
// socket, and a kept directory would be a door to it. Opened beneath the cover's
// descriptor with no symlink followed, so nothing renamed on the host redirects it.
int BindFileBack(const PendingView::Hidden& cover, const std::string& rel,
                 const std::string& path) {
  const size_t slash = rel.rfind('/');
  UniqueFd parent = OpenDirNoSymlinksBeneath(
      cover.fd.get(), slash == std::string::npos ? "" : rel.substr(0, slash));
  if (!parent.valid()) return errno;
  const std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
  UniqueFd file(openat(parent.get(), base.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!file.valid()) return errno;
  struct stat st {};
  if (fstat(file.get(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return 0;  // a socket, a link or a directory is never kept
  if (int e = MakeParents(path.substr(0, path.rfind('/'))); e != 0) return e;
  UniqueFd point(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  if (!point.valid()) return errno;
  const std::string from = "/proc/self/fd/" + std::to_string(file.get());
  if (mount(from.c_str(), path.c_str(), nullptr, MS_BIND, nullptr) != 0) return errno;
  return 0;
}

// Binds back each of view.kept_files that a cover hides, read-only in the end
// (MakeViewReadOnly). why at the run, not while a worker waits: resolvers replace these
// files by renaming a new one over them, and a bind made early would pin a stale copy.
int KeepFiles(const PendingView& view) {
  for (const std::string& path : view.kept_files) {
    std::string rel;
    const PendingView::Hidden* h = HiddenBy(view, path, rel);
    if (h == nullptr || rel.empty()) continue;
    if (int e = BindFileBack(*h, rel, path); e != 0 && e != ENOENT && e != EACCES) return e;
  }
  return 0;
}

// Binds back node's prefix `node_dir` where a cover hides it, read-only in the end: before
// the Landlock rules made ahead, which open it in the run's view.
int KeepNodeDir(const std::string& node_dir, const PendingView& view) {
  std::string rel;
  const PendingView::Hidden* h = node_dir.empty() ? nullptr : HiddenBy(view, node_dir, rel);
  if (h == nullptr) return 0;
  // why never a prefix that is or holds a hidden place (node at ~/bin/node has the home as
  // its prefix): the bind would bring the place back whole, agents' sockets included. Such
  // a node still runs (it is exec'd by descriptor), without its prefix in the view.
  if (HoldsACover(view, node_dir)) return 0;
  // why: node may be installed under a hidden home (a per-user install); its prefix is
  // bound back alone, as the Landlock rule grants it (read and execute), and without the
  // mounts beneath it.
  UniqueFd dir = OpenDirNoSymlinksBeneath(h->fd.get(), rel);
  if (!dir.valid()) return errno;
  if (int e = MakeParents(node_dir); e != 0) return e;
  const std::string from = "/proc/self/fd/" + std::to_string(dir.get());
  if (mount(from.c_str(), node_dir.c_str(), nullptr, MS_BIND, nullptr) != 0) return errno;
  return 0;
}

// A fresh, private /dev/shm: what another run or the user left there is not seen, and
// what this run leaves dies with it. Skipped where the host has none.
int MountPrivateShm(PendingView& view) {
  struct stat st {};
  if (stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  if (mount("tmpfs", "/dev/shm", "tmpfs", kTmpFlags | MS_NOEXEC, kRunShmOptions) != 0)
    return errno;
  view.writable.push_back("/dev/shm");
  return 0;
}

int MountSetattr(const char* path, unsigned int flags, uint64_t set, uint64_t clear) {
  struct mount_attr attr {};
  attr.attr_set = set;
  attr.attr_clr = clear;
  if (syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof attr) != 0) return errno;
  return 0;
}

}  // namespace

StepResult EnterUserNamespace() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
    return StepFailed(WorkerStep::kUserNamespace, errno);
  // The uid switch left the worker non-dumpable, which makes /proc/self/* root-owned, so
  // the map files could not be opened. why: dumpable only while opening them (the write
  // is checked against the opener), so a same-uid process gets no window worth having
  // to attach; and past unshare the worker holds no capability outside its namespace.
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return StepFailed(WorkerStep::kUserNamespace, errno);
  UniqueFd setgroups_fd(open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC));
  UniqueFd uid_map(open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC));
  UniqueFd gid_map(open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC));
  const int open_err = errno;
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return StepFailed(WorkerStep::kUserNamespace, errno);
  if (!setgroups_fd.valid() || !uid_map.valid() || !gid_map.valid())
    return StepFailed(WorkerStep::kUserNamespace, open_err);
  // why: the script keeps exactly its own uid and gid; nothing else (root included) is
  // mapped, and setgroups stays refused so no group can be dropped to gain access.
  if (int e = WriteAll(setgroups_fd.get(), "deny"); e != 0)
    return StepFailed(WorkerStep::kUserNamespace, e);
  if (int e = WriteAll(uid_map.get(), std::to_string(uid) + " " + std::to_string(uid) + " 1");
      e != 0)
    return StepFailed(WorkerStep::kUserNamespace, e);
  if (int e = WriteAll(gid_map.get(), std::to_string(gid) + " " + std::to_string(gid) + " 1");
      e != 0)
    return StepFailed(WorkerStep::kUserNamespace, e);
  return StepOk();
}

StepResult MakeViewPrivate() {
  // A mount namespace owned by a new user namespace already receives the host's mounts
  // as slaves, so nothing flows back. why: private, so no host mount event flows in
  // either: the run's view stays what was built here.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return MountFailed(errno);
  return StepOk();
}

StepResult MountPrivateTmp() {
  if (StepResult r = MakeViewPrivate()) return r;
  // why: nosuid and nodev, so nothing the script drops in /tmp gains privileges or
  // reaches a device; exec stays allowed (tools unpack and run helpers there).
  if (mount("tmpfs", "/tmp", "tmpfs", kTmpFlags, kRunTmpOptions) != 0) return MountFailed(errno);
  return StepOk();
}

StepResult CoverOperatorConfig() { return CoverDirs(OperatorDirs()); }

StepResult CoverDirs(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
      // why: absent, a non-directory on the way, a loop, or out of the run-as user's reach
      // by this path: nothing there to cover for this user, whose run cannot reach it by
      // that path either. Any other error fails the view (fail closed).
      if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP) continue;
      return MountFailed(errno);
    }
    if (!S_ISDIR(st.st_mode)) continue;  // a file there is left to its mode and Landlock
    // why: the unit's environment file and systemd's credentials are no run's business,
    // and a Landlock rule cannot subtract a directory (worker/landlock.cc grants around
    // it instead); this cover holds with Landlock off as well. Empty, noexec, read-only.
    if (mount("tmpfs", dir.c_str(), "tmpfs", kTmpFlags | MS_NOEXEC, "mode=0755,size=4k") != 0)
      return MountFailed(errno);
    if (mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_RDONLY | kTmpFlags | MS_NOEXEC,
              nullptr) != 0)
      return MountFailed(errno);
  }
  return StepOk();
}

StepResult BeginRunView(const std::vector<std::string>& hidden_roots, const std::string& node_dir,
                        PendingView& view) {
  if (StepResult r = EnterUserNamespace()) return r;
  view.kept_files = ResolveKeptFiles();
  view.hidden_roots = hidden_roots;
  // why / stays a slave of the host's until FinishRunView: a worker may wait long for its
  // run; where the host's mounts are shared, an unmount of a filesystem the view neither
  // covers nor opened reaches its copy meanwhile, so the waiting worker does not keep it
  // alive (/tmp and the roots it opened and covered stay pinned until its run).
  // why: nosuid and nodev, so nothing the script drops in /tmp gains privileges or
  // reaches a device; exec stays allowed (tools unpack and run helpers there). Opened
  // first: the run's scratch directory (its TMPDIR) may lie there.
  if (int e = CoverKeepingFd("/tmp", kTmpFlags, kRunTmpOptions, view); e != 0)
    return MountFailed(e);
  view.writable.push_back("/tmp");
  for (const std::string& root : hidden_roots) {
    struct stat st {};
    // A root beneath an earlier cover (e.g. under /tmp) is already gone. why the others
    // are skipped too: a place the run's user cannot reach by its path (a private
    // ancestor) holds nothing it could use; any other error fails the view.
    if (stat(root.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == ELOOP) continue;
      return MountFailed(errno);
    }
    // why: an empty cover, noexec and (FinishRunView) read-only: nothing can be placed or
    // run where the other skills were. Writable until the run's directories have their
    // mount points in it; only this worker's mount namespace has it meanwhile.
    if (int e = CoverKeepingFd(root, kTmpFlags | MS_NOEXEC, "mode=0755,size=1m", view); e != 0)
      return MountFailed(e);
  }
  if (int e = MountPrivateShm(view); e != 0) return MountFailed(e);
  if (int e = KeepNodeDir(node_dir, view); e != 0) return MountFailed(e);
  return CoverOperatorConfig();
}

StepResult MakeViewReadOnly(const std::vector<std::string>& writable) {
  // why: Landlock has no right for chmod, chown, utimes or extended attributes, so a run
  // could change the metadata of any file its uid owns or may write; a read-only mount
  // refuses all of them (EROFS), mknod and rename too, on everything the view shows.
  if (int e = MountSetattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0); e != 0)
    return StepFailed(WorkerStep::kReadOnlyView, e);
  for (const std::string& path : writable) {
    // Each is a mount of this view's own (a fresh tmpfs or a bind made for the run), so
    // only that mount becomes writable again, nothing around or beneath it.
    int e = MountSetattr(path.c_str(), 0, 0, MOUNT_ATTR_RDONLY);
    // why EPERM is kept read-only: the host mounted it so (a locked flag); the run cannot
    // write there, as no process on the host can.
    if (e != 0 && e != EPERM) return StepFailed(WorkerStep::kReadOnlyView, e);
  }
  return StepOk();
}

StepResult FinishRunView(const RunSpec& spec, PendingView& view) {
  if (StepResult r = MakeViewPrivate()) return r;
  // why: the worker may have waited long; a mount the host made on an ancestor since, or
  // a root renamed away by whoever may write its parent, would leave a path that no
  // longer leads to the cover, where the binds below would go. The view is private now:
  // each path must still lead to its very cover, or nothing is bound (ESTALE).
  for (size_t i = 0; i < view.hidden.size(); ++i) {
    const PendingView::Hidden& h = view.hidden[i];
    // A root at /tmp itself is covered on top of the run's /tmp: the last cover is seen.
    bool covered_again = false;
    for (size_t j = i + 1; j < view.hidden.size(); ++j)
      covered_again = covered_again || view.hidden[j].path == h.path;
    if (covered_again) continue;
    struct stat now {};
    if (lstat(h.path.c_str(), &now) != 0) return MountFailed(errno);
    if (now.st_dev != h.cover_dev || now.st_ino != h.cover_ino) return MountFailed(ESTALE);
  }
  // A bind source must belong to this mount namespace, so the skill directory is opened
  // again here (beneath its root's descriptor); it must be the directory the broker
  // checked (fd 7).
  UniqueFd dir = OpenHostDir(view, spec.skill_dir_path);
  if (!dir.valid()) return MountFailed(errno);
  struct stat checked {}, reopened {};
  if (fstat(kWorkerSkillDirFd, &checked) != 0 || fstat(dir.get(), &reopened) != 0)
    return MountFailed(errno);
  // why: a directory swapped since the broker's check is refused, never bound.
  if (!SameDirectory(checked, reopened)) return MountFailed(ESTALE);
  // The broker's scratch directory (the run's TMPDIR) is bound back at its path in the
  // view, so TMPDIR names the same directory there.
  if (!spec.scratch_dir_path.empty()) {
    UniqueFd scratch = OpenHostDir(view, spec.scratch_dir_path);
    if (!scratch.valid()) return MountFailed(errno);
    if (int e = MakeParents(spec.scratch_dir_path); e != 0) return MountFailed(e);
    const std::string from = "/proc/self/fd/" + std::to_string(scratch.get());
    if (mount(from.c_str(), spec.scratch_dir_path.c_str(), nullptr, MS_BIND, nullptr) != 0)
      return MountFailed(errno);
    view.writable.push_back(spec.scratch_dir_path);
  }
  // MCP_DATA_DIR bound onto its own path, a mount of its own that stays writable
  // (MakeViewReadOnly), also where a hidden place (/tmp, a home) holds it.
  // why never one that is or holds a hidden place (MCP_DATA_DIR=$HOME): the bind would
  // bring the place back whole and writable; the run then has no data directory.
  if (!spec.data_dir_path.empty() && !HoldsACover(view, spec.data_dir_path)) {
    UniqueFd data = OpenHostDir(view, spec.data_dir_path);
    if (data.valid()) {
      if (int e = MakeParents(spec.data_dir_path); e != 0) return MountFailed(e);
      const std::string from = "/proc/self/fd/" + std::to_string(data.get());
      if (mount(from.c_str(), spec.data_dir_path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
        return MountFailed(errno);
      view.writable.push_back(spec.data_dir_path);
    } else if (errno != ENOENT && errno != EACCES && errno != ENOTDIR && errno != ELOOP) {
      // why the others are skipped: no such directory this run's user can reach, where
      // the run could not write on the host either.
      return MountFailed(errno);
    }
  }
  if (int e = KeepFiles(view); e != 0) return MountFailed(e);
  OpenedDirs module_dirs;
  if (int e = OpenModuleDirs(spec, view, module_dirs); e != 0) return MountFailed(e);
  if (int e = MakeParents(spec.skill_dir_path); e != 0) return MountFailed(e);
  const std::string source = "/proc/self/fd/" + std::to_string(dir.get());
  if (mount(source.c_str(), spec.skill_dir_path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return MountFailed(errno);
  if (int e = BindModuleDirs(module_dirs); e != 0) return MountFailed(e);
  // why read-only: the run reads its own bundle and never writes it, also where Landlock
  // is off (an ordinary user's run owns the files it would otherwise rewrite).
  if (int e = MakeBindReadOnly(spec.skill_dir_path, dir.get()); e != 0) return MountFailed(e);
  // The roots' covers become read-only once the skill's and the modules' mount points are
  // made (the first entry is /tmp, the run's to write).
  for (size_t i = 1; i < view.hidden.size(); ++i) {
    if (mount(nullptr, view.hidden[i].path.c_str(), nullptr,
              MS_REMOUNT | MS_RDONLY | kTmpFlags | MS_NOEXEC, nullptr) != 0)
      return MountFailed(errno);
  }
  // why: what the covers hide is reached by these descriptors alone; none outlives the view.
  view.hidden.clear();
  return MakeViewReadOnly(view.writable);
}

StepResult EnterBoundSkillDir(const std::string& path, int skill_dir_fd) {
  if (chdir(path.c_str()) != 0) return StepFailed(WorkerStep::kChdir, errno);
  struct stat cwd {}, checked {};
  if (stat(".", &cwd) != 0 || fstat(skill_dir_fd, &checked) != 0)
    return StepFailed(WorkerStep::kChdir, errno);
  if (!SameDirectory(cwd, checked)) return StepFailed(WorkerStep::kChdir, ESTALE);
  return StepOk();
}

}  // namespace skillmcp::worker
