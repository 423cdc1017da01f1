// The run's own view of the filesystem (RunSpec::namespaces; the broker's
// SKILL_MCP_NAMESPACES=auto where its boot probe passed, or =on). After the identity switch the worker enters a new user and
// mount namespace, where it holds capabilities over that namespace only, and builds:
//   - a private, empty /tmp (tmpfs): nothing left there by other runs, other skills or
//     other users is visible, and nothing this run leaves there outlives it;
//   - an empty read-only tmpfs over every skills root: the other skills' bundles do not
//     exist;
//   - an empty read-only tmpfs over each of the operator's directories that exists
//     (worker/operator_dirs.h: /etc/skill-mcp, systemd's credential stores);
//   - the node_modules directories of RunSpec::read_dirs bound back read-only where a
//     cover hid them (opened with no symlink followed and checked, worker/module_dir.h),
//     each checked to be the directory opened before covering;
//   - the skill's own directory bound back read-only at its real path, verified to be
//     the very directory the broker checked (fd 7), so the script's paths and require()
//     work.
// Each read-only bind keeps its source mount's noexec, atime mode and nosymfollow (a
// user namespace may not clear the locked ones).
// The namespace's capabilities go with the capability steps that follow; the seccomp
// filter then refuses unshare, setns and mount, so the script cannot undo any of it.
#pragma once

#include <string>
#include <vector>

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

inline constexpr char kRunTmpOptions[] = "mode=1777,size=256m,nr_inodes=65536";

// kUserNamespace, then kMountView. Call after the identity switch (the namespace maps
// exactly the run-as uid and gid onto themselves) and before the capability steps.
StepResult EnterRunView(const RunSpec& spec);

// The parts of EnterRunView that do not depend on the run: the worker's probe mode
// (RunSpec::probe, spawned by broker/run/namespace_probe.cc) runs these, so the probe
// fails where a run would.
StepResult EnterUserNamespace();   // kUserNamespace: unshare, setgroups deny, own maps
StepResult MountPrivateTmp();      // kMountView: / private, tmpfs on /tmp
StepResult CoverOperatorConfig();  // kMountView: empty read-only tmpfs on each OperatorDirs()
// The same for `dirs`: a path that is absent, has a non-directory or a loop on the way,
// or that the caller cannot search is skipped; any other error fails the step.
StepResult CoverDirs(const std::vector<std::string>& dirs);

// kChdir with namespaces: chdir to the bound skill directory by path, then require it
// to be the directory of fd 7 (same device and inode).
StepResult EnterBoundSkillDir(const std::string& path, int skill_dir_fd);

}  // namespace skillmcp::worker
