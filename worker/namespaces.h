// The run's own view of the filesystem (RunSpec::namespaces; the broker's
// SKILL_MCP_NAMESPACES=auto where its boot probe passed, or =on). After the identity switch the
// worker enters a new user and mount namespace, where it holds capabilities over that namespace
// only, and builds:
//   - a private, empty /tmp and /dev/shm (tmpfs): nothing left there by other runs, other
//     skills or other users is visible, and nothing this run leaves there outlives it;
//   - an empty read-only tmpfs over every place where users' live sockets and secrets sit
//     (homes, /run, /var/tmp, /media, /mnt, /srv, the broker's HOME and runtime
//     directory), with only the resolver's files and node's prefix bound back from them;
//   - an empty read-only tmpfs over every skills root: the other skills' bundles do not
//     exist;
//   - an empty read-only tmpfs over each of the operator's directories that exists
//     (worker/operator_dirs.h: /etc/skill-mcp, systemd's credential stores);
//   - the node_modules directories of RunSpec::read_dirs bound back read-only where a
//     cover hid them (opened beneath the covered directory's descriptor, with no symlink
//     followed, and checked, worker/module_dir.h), each checked after the bind to be the
//     directory opened;
//   - the skill's own directory bound back read-only at its real path, verified to be
//     the very directory the broker checked (fd 7), so the script's paths and require()
//     work.
// Each read-only bind keeps its source mount's noexec, atime mode and nosymfollow (a
// user namespace may not clear the locked ones). Finally every mount is made read-only
// but the run's own /tmp, /dev/shm, scratch directory and MCP_DATA_DIR.
// The namespace's capabilities go with the capability steps that follow; the seccomp
// filter then refuses unshare, setns and mount, so the script cannot undo any of it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

inline constexpr char kRunTmpOptions[] = "mode=1777,size=256m,nr_inodes=65536";
inline constexpr char kRunShmOptions[] = "mode=1777,size=64m,nr_inodes=4096";

// What BeginRunView leaves for FinishRunView: the directories its covers hide (/tmp first,
// then each skills root it covered), opened before covering, in the view's own mount
// namespace (a bind source must belong to it).
struct PendingView {
  struct Hidden {
    std::string path;
    UniqueFd fd;  // O_PATH: reaches what the cover hides
    dev_t cover_dev = 0;  // the cover itself (its tmpfs root), checked again at the finish
    ino_t cover_ino = 0;
  };
  std::vector<Hidden> hidden;
  // The mounts of the view the run may write (its /tmp and /dev/shm, the scratch
  // directory, MCP_DATA_DIR); everything else ends read-only (MakeViewReadOnly).
  std::vector<std::string> writable;
  // The real paths of the /etc files a run reads that lead elsewhere (resolv.conf into
  // /run, ...), resolved before any cover hid them; bound back by FinishRunView.
  std::vector<std::string> kept_files;
  std::vector<std::string> hidden_roots;  // every root and place asked for, covered or not
};

// The view in two halves, so that a worker started ahead builds what does not depend on
// its run while it waits (CellSpec::view_ahead): kUserNamespace, then kMountView.
// BeginRunView, after the identity switch (the namespace maps exactly the run-as uid and
// gid onto themselves) and before the capability steps: the user and mount namespace, the
// private /tmp, the covers over `hidden_roots` (writable until the second half) and over
// the operator's directories. / stays the host's slave meanwhile.
// FinishRunView, once the description names the run: / made private, the skill
// directory opened beneath its root's descriptor and checked against fd 7 (ESTALE), the
// scratch directory and the covered module directories bound back, the covers made
// read-only, and the descriptors of `view` closed.
// `hidden_roots` holds the skills roots and the places where users' sockets and secrets
// live (homes, /run, /var/tmp, ...: broker/run/private_places.h); the files of
// kKeptEtcFiles that lead into one and node's prefix `node_dir` (when known) are bound
// back alone. FinishRunView ends with MakeViewReadOnly.
StepResult BeginRunView(const std::vector<std::string>& hidden_roots, const std::string& node_dir,
                        PendingView& view);
StepResult FinishRunView(const RunSpec& spec, PendingView& view);

// kReadOnlyView: every mount of the view read-only (EROFS for chmod, chown, utimes,
// xattrs, mknod, rename and writes), then `writable` (each a mount of the view's own)
// writable again.
StepResult MakeViewReadOnly(const std::vector<std::string>& writable);

// The parts of the view that do not depend on the run: the worker's probe mode
// (RunSpec::probe, spawned by broker/run/namespace_probe.cc) runs these, so the probe
// fails where a run would.
StepResult EnterUserNamespace();   // kUserNamespace: unshare, setgroups deny, own maps
StepResult MountPrivateTmp();      // kMountView: MakeViewPrivate, tmpfs on /tmp
StepResult MakeViewPrivate();      // kMountView: / and every mount beneath it private
StepResult CoverOperatorConfig();  // kMountView: empty read-only tmpfs on each OperatorDirs()
// The same for `dirs`: a path that is absent, has a non-directory or a loop on the way,
// or that the caller cannot search is skipped; any other error fails the step.
StepResult CoverDirs(const std::vector<std::string>& dirs);

// kChdir with namespaces: chdir to the bound skill directory by path, then require it
// to be the directory of fd 7 (same device and inode).
StepResult EnterBoundSkillDir(const std::string& path, int skill_dir_fd);

}  // namespace skillmcp::worker
