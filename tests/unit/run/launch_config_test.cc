#include "broker/run/launch_config.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shared/run_limits_default.h"

namespace skillmcp {
namespace {

TEST(ParsePositive, StrictDecimal) {
  EXPECT_EQ(ParsePositive("1"), 1u);
  EXPECT_EQ(ParsePositive("256"), 256u);
  EXPECT_EQ(ParsePositive("18446744073709551615"), UINT64_MAX);
  for (const char* bad :
       {"", "0", "-1", "+5", " 5", "5 ", "05", "1e3", "0x10", "12abc", "18446744073709551616"}) {
    EXPECT_EQ(ParsePositive(bad), std::nullopt) << bad;
  }
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-launch-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string MakeFile(const std::string& rel, mode_t mode,
                       const std::string& content = "#!/bin/true\n") {
    std::string p = dir_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << content;
    chmod(p.c_str(), mode);
    return p;
  }
  std::string dir_;
};

using SearchPathTest = TempDir;

TEST_F(SearchPathTest, FirstAbsoluteExecutableWins) {
  MakeFile("a/node", 0644);  // not executable: skipped
  std::string b = MakeFile("b/node", 0755);
  MakeFile("c/node", 0755);
  std::string path = dir_ + "/a:" + dir_ + "/b:" + dir_ + "/c";
  EXPECT_EQ(SearchPath(path, "node"), b);
  EXPECT_EQ(SearchPath(dir_ + "/a", "node"), "");
}

TEST_F(SearchPathTest, RelativeAndEmptyEntriesAreSkipped) {
  MakeFile("rel/node", 0755);
  ASSERT_EQ(chdir(dir_.c_str()), 0);
  // "rel" and "" (the cwd) would find it; both must be ignored.
  EXPECT_EQ(SearchPath("rel::.", "node"), "");
  ASSERT_EQ(chdir("/"), 0);
}

EnvStore WorkingEnv() {
  EnvStore env;
  env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  env.Set("SKILL_MCP_NODE", "/usr/bin/node");
  return env;
}

TEST(ResolveLaunchConfig, OpensWorkerAndNodeByDescriptor) {
  EnvStore env = WorkingEnv();
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config) << r.error;
  const LaunchConfig& c = *r.config;
  EXPECT_TRUE(c.ready()) << c.refusal;
  ASSERT_EQ(c.interpreters.size(), 1u);
  EXPECT_EQ(c.interpreters[0].name, "node");
  EXPECT_FALSE(c.interpreters_configured);
  EXPECT_EQ(c.interpreters[0].path, std::filesystem::canonical("/usr/bin/node").string());
  EXPECT_GE(fcntl(c.interpreters[0].fd.get(), F_GETFD) & FD_CLOEXEC, 1);
  EXPECT_GE(fcntl(c.worker.get(), F_GETFD) & FD_CLOEXEC, 1);
  EXPECT_EQ(c.limits.nproc, kDefaultRunLimits.nproc);
  EXPECT_EQ(c.limits.data, kDefaultRunLimits.data);
  EXPECT_TRUE(c.seccomp);
  // Compiled once here for every worker: whole 8-byte instructions.
  EXPECT_GT(c.seccomp_bpf.size(), 8u);
  EXPECT_EQ(c.seccomp_bpf.size() % 8, 0u);
  EXPECT_FALSE(c.switch_ids);
  WorkerLayerFacts f = LayerFacts(c);
  EXPECT_TRUE(f.runs_possible);
  EXPECT_TRUE(f.limits_configured);
}

// The worker's spec takes only normalised Landlock paths (shared/run_spec_codec.cc), so
// the scratch directories' base is TMPDIR's real path: "/tmp/" or "/tmp//." would
// otherwise refuse every run. One that does not resolve stays as set (making the scratch
// directory then fails with its own error).
TEST(ResolveLaunchConfig, TheScratchBaseIsTmpdirsRealPath) {
  for (const char* spelled : {"/tmp/", "//tmp", "/tmp/./", "/tmp"}) {
    EnvStore env = WorkingEnv();
    env.Set("TMPDIR", spelled);
    LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->scratch_base, std::filesystem::canonical("/tmp").string()) << spelled;
  }
  EnvStore env = WorkingEnv();
  env.Set("TMPDIR", "/no/such/tmp/");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->scratch_base, "/no/such/tmp/");
}

TEST(ResolveLaunchConfig, NodeFoundOnTheBrokerPath) {
  EnvStore env;
  env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  env.Set("PATH", "relative/bin:/usr/bin");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config);
  EXPECT_TRUE(r.config->ready()) << r.config->refusal;
  EXPECT_EQ(r.config->Interpreter("node")->path,
            std::filesystem::canonical("/usr/bin/node").string());
}

TEST(ResolveLaunchConfig, LimitOverridesAndRunAs) {
  EnvStore env = WorkingEnv();
  env.Set("SKILL_MCP_LIMIT_NPROC", "64");
  env.Set("SKILL_MCP_LIMIT_AS_MB", "8192");
  env.Set("SKILL_MCP_LIMIT_CPU_SECONDS", "30");
  env.Set("SKILL_MCP_LIMIT_FSIZE_MB", "1");
  env.Set("SKILL_MCP_LIMIT_NOFILE", "128");
  env.Set("SKILL_MCP_LIMIT_DATA_MB", " ");  // blank counts as unset: the default stays
  env.Set("SKILL_MCP_SECCOMP", "off");
  PrivilegeState p;
  p.worker_switch = true;
  p.run_as.ok = true;
  p.run_as.uid = 64000;
  p.run_as.gid = 64005;
  LaunchConfigResult r = ResolveLaunchConfig(env, p);
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->limits.nproc, 64u);
  EXPECT_EQ(r.config->limits.address_space, 8192ull << 20);
  EXPECT_EQ(r.config->limits.cpu_seconds, 30u);
  EXPECT_EQ(r.config->limits.fsize, 1u << 20);
  EXPECT_EQ(r.config->limits.nofile, 128u);
  EXPECT_EQ(r.config->limits.data, kDefaultRunLimits.data);
  EXPECT_FALSE(r.config->seccomp);
  EXPECT_TRUE(r.config->seccomp_bpf.empty());
  EXPECT_TRUE(r.config->switch_ids);
  EXPECT_EQ(r.config->uid, 64000u);
  EXPECT_EQ(r.config->gid, 64005u);
}

// What a namespaced run must not see: every root (real path) and every skill's parent,
// never "/", shortest first so that a cover hides what lies beneath it.
TEST(HiddenRoots, RootsAndSkillParentsShortestFirstWithoutSlash) {
  char tmpl[] = "/tmp/skillmcp-hr-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(symlink(root.c_str(), (root + "-link").c_str()), 0);
  const auto hidden = HiddenRoots({root + "-link", "/", "/nonexistent/root"},
                                  {root + "/a", root + "/nested/deeper/b", "/c"});
  EXPECT_EQ(hidden, (std::vector<std::string>{root, root + "/nested/deeper"}));
  unlink((root + "-link").c_str());
  rmdir(root.c_str());
}

// More skills directories than a run spec can carry: no view, so no run, and the layer
// says why (doctor must not report it on).
TEST(HiddenRoots, TooManyRefuseNamespacedRuns) {
  LaunchConfig c;
  c.namespaces = c.namespaces_demanded = true;  // SKILL_MCP_NAMESPACES=on
  std::vector<std::string> dirs;
  for (size_t i = 0; i <= kRunSpecMaxHiddenRoots; ++i)
    dirs.push_back("/srv/root" + std::to_string(i) + "/skill");
  SetHiddenRoots(c, {}, dirs);
  EXPECT_EQ(c.hidden_roots.size(), kRunSpecMaxHiddenRoots + 1);
  EXPECT_NE(c.namespaces_problem.find("at most 64"), std::string::npos) << c.namespaces_problem;
  EXPECT_EQ(c.refusal, c.namespaces_problem);
  EXPECT_FALSE(LayerFacts(c).namespaces_problem.empty());
  LaunchConfig off;  // the same tree without the option: nothing refused
  SetHiddenRoots(off, {}, dirs);
  EXPECT_TRUE(off.refusal.empty());
  EXPECT_TRUE(off.namespaces_problem.empty());
  LaunchConfig automatic;  // SKILL_MCP_NAMESPACES=auto: off with the reason, runs go on
  automatic.namespaces = true;
  SetHiddenRoots(automatic, {}, dirs);
  EXPECT_TRUE(automatic.refusal.empty());
  EXPECT_FALSE(automatic.namespaces);
  EXPECT_NE(automatic.namespaces_off_reason.find("at most 64"), std::string::npos);
}

// The mount point of each proc mount but /proc in this mount namespace, from
// /proc/self/mountinfo (field 5, octal escapes decoded; the type follows " - ").
std::vector<std::string> OtherProcMounts() {
  std::vector<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 5, "proc ") != 0) continue;
    size_t at = 0;
    for (int field = 0; field < 4; ++field) at = line.find(' ', at) + 1;
    const std::string raw = line.substr(at, line.find(' ', at) - at);
    std::string point;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 3 < raw.size()) {
        point += static_cast<char>(std::stoi(raw.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        point += raw[i];
      }
    }
    if (point != "/proc") points.push_back(point);
  }
  return points;
}

// A runtime that masks part of /proc (podman binds /dev/null over some of its
// files) refuses a fresh /proc to a user namespace; the boot probe then keeps the
// namespaces and turns only fresh-proc off, with the reason. Played here by a private
// mount namespace with a file bound over /proc/uptime, and no other proc mount: the
// kernel allows a fresh /proc where any proc mount of the namespace is fully visible, as
// the one debootstrap mounts in its target while CI builds the deploy images (in a
// container, /proc is the only one). Root only (the mounts).
TEST(ResolveLaunchConfig, AMaskedProcTurnsOnlyTheFreshProcOff) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mask /proc in a mount namespace";
  int said[2];
  ASSERT_EQ(pipe2(said, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(said[0]);
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("/dev/null", "/proc/uptime", nullptr, MS_BIND, nullptr) != 0)
      _exit(10);
    // Private above, so the host keeps its mounts; deepest first.
    std::vector<std::string> others = OtherProcMounts();
    std::sort(others.begin(), others.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    for (const std::string& point : others)
      if (umount2(point.c_str(), MNT_DETACH) != 0) _exit(16);
    if (!OtherProcMounts().empty()) _exit(16);
    LaunchConfigResult r = ResolveLaunchConfig(WorkingEnv(), PrivilegeState{});
    if (!r.config) _exit(11);
    // What the probe said, for the failure message (a pipe far from full).
    const std::string why =
        "refusal: " + r.config->refusal + "; namespaces: " + r.config->namespaces_problem +
        r.config->namespaces_off_reason + "; fresh /proc: " + r.config->fresh_proc_problem;
    if (write(said[1], why.data(), why.size()) < 0) _exit(15);
    if (!r.config->ready()) _exit(11);
    if (!r.config->namespaces) _exit(12);  // no user namespaces here at all
    if (r.config->fresh_proc) _exit(13);
    _exit(r.config->fresh_proc_problem.find("fresh /proc") == std::string::npos ? 14 : 0);
  }
  close(said[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = read(said[0], buf, sizeof buf)) > 0;)
    why.append(buf, static_cast<size_t>(n));
  close(said[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 12)
    GTEST_SKIP() << "this host gives no user namespace to runs: " << why;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: no mask, 11: no runs, 13: fresh /proc on, 14: no reason, 16: another proc "
         "mount stayed; "
      << why;
  // Unmasked (the control): the same probe mounts it.
  LaunchConfigResult r = ResolveLaunchConfig(WorkingEnv(), PrivilegeState{});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_TRUE(r.config->fresh_proc) << r.config->fresh_proc_problem;
}

// With runs already off (no node), the probe is not tried and the layer says so.
TEST(ResolveLaunchConfig, NamespacesNotProbedWhenRunsAreOffSayWhy) {
  EnvStore env = WorkingEnv();
  env.Set("SKILL_MCP_NODE", "/nonexistent/node");
  env.Set("SKILL_MCP_NAMESPACES", "on");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config.has_value()) << r.error;
  EXPECT_NE(r.config->namespaces_problem.find("not tried"), std::string::npos)
      << r.config->namespaces_problem;
}

// The boot probe goes as far as a run's mounts: a host that lets unshare through but
// refuses mount (a systemd filter without @mount) turns the layer off at boot, instead
// of every run failing later. In a child under a filter that answers mount with EPERM.
TEST(ResolveLaunchConfig, NamespaceProbeFailsWhereMountIsRefused) {
  const pid_t pid = fork();
  if (pid == 0) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0) != 0 ||
        seccomp_load(ctx) != 0)
      _exit(10);
    EnvStore env = WorkingEnv();
    env.Set("SKILL_MCP_NAMESPACES", "on");
    LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
    if (!r.config) _exit(11);
    if (r.config->namespaces_problem.find("Operation not permitted)") == std::string::npos)
      _exit(12);
    if (r.config->ready()) _exit(13);
    // The default, auto: the same host runs scripts, without namespaces, and says why.
    env.Set("SKILL_MCP_NAMESPACES", "auto");
    LaunchConfigResult a = ResolveLaunchConfig(env, PrivilegeState{});
    if (!a.config || !a.config->ready() || a.config->namespaces) _exit(14);
    _exit(a.config->namespaces_off_reason.find("Operation not permitted)") == std::string::npos
              ? 15
              : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no filter, 11: no config, 12: probe passed, "
                                       "13: runs on, 14: auto refuses runs, 15: no reason";
}

TEST(ResolveLaunchConfig, NamespacesOptionIsStrict) {
  EnvStore env = WorkingEnv();
  env.Set("SKILL_MCP_NAMESPACES", "maybe");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  EXPECT_FALSE(r.config.has_value());
  EXPECT_NE(r.error.find("SKILL_MCP_NAMESPACES"), std::string::npos) << r.error;
}

TEST(ResolveLaunchConfig, BadLimitIsABootError) {
  for (const char* bad : {"abc", "0", "-5", "12MB", "99999999999999999999"}) {
    EnvStore env = WorkingEnv();
    env.Set("SKILL_MCP_LIMIT_AS_MB", bad);
    LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
    EXPECT_FALSE(r.config) << bad;
    EXPECT_NE(r.error.find("SKILL_MCP_LIMIT_AS_MB"), std::string::npos) << r.error;
  }
  EnvStore env = WorkingEnv();
  env.Set("SKILL_MCP_LIMIT_AS_MB", "18446744073709551615");  // overflows once in bytes
  EXPECT_FALSE(ResolveLaunchConfig(env, PrivilegeState{}).config);
  env = WorkingEnv();
  env.Set("SKILL_MCP_SECCOMP", "maybe");
  EXPECT_FALSE(ResolveLaunchConfig(env, PrivilegeState{}).config);
}

TEST(ResolveLaunchConfig, MissingNodeOrWorkerRefusesRunsWithTheReason) {
  EnvStore env = WorkingEnv();
  env.Set("SKILL_MCP_NODE", "/nonexistent/node");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config);
  EXPECT_FALSE(r.config->ready());
  EXPECT_NE(r.config->refusal.find("/nonexistent/node"), std::string::npos) << r.config->refusal;
  EXPECT_FALSE(LayerFacts(*r.config).runs_possible);

  env = WorkingEnv();
  env.Set("SKILL_MCP_NODE", "node");  // relative: never pinned
  r = ResolveLaunchConfig(env, PrivilegeState{});
  EXPECT_NE(r.config->refusal.find("not an absolute path"), std::string::npos) << r.config->refusal;

  EnvStore no_node;
  no_node.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  no_node.Set("PATH", "/nonexistent");
  r = ResolveLaunchConfig(no_node, PrivilegeState{});
  EXPECT_NE(r.config->refusal.find("no node was found"), std::string::npos) << r.config->refusal;

  env = WorkingEnv();
  env.Set("SKILL_MCP_WORKER", "/nonexistent/skill-mcp-worker");
  r = ResolveLaunchConfig(env, PrivilegeState{});
  EXPECT_FALSE(r.config->ready());
  EXPECT_NE(r.config->refusal.find("worker binary cannot be used"), std::string::npos)
      << r.config->refusal;
}

}  // namespace
}  // namespace skillmcp
