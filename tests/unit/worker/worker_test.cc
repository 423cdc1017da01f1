// The real skill-mcp-worker, launched with the broker's descriptor layout, on the real
// kernel. The probe (tests/probe/try_syscall.cc) reports what the exec'd program sees.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "shared/run_limits_default.h"
#include "shared/landlock_abi.h"
#include "shared/worker_protocol.h"
#include "tests/probe/syscall_table.h"
#include "tests/unit/worker/launcher.h"
#include "tests/unit/worker/test_util.h"

namespace skillmcp::testing {
namespace {

constexpr uid_t kNobody = 65534;
constexpr const char* kZeroCaps = "0000000000000000";

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the worker tests switch uids and need root";
    WriteFile(dir_.Sub("script.js"), "console.log('hello')\n");
  }

  // The probe as the program, run as nobody under the default limits and the policy.
  RunSpec ProbeSpec(std::vector<std::string> probe_args) {
    // The probe takes node's place on fd 5 and gets node's argv; it reads its mode after
    // the script path (tests/probe/try_syscall.cc). The shipped worker has no other mode.
    RunSpec spec;
    spec.script_path = dir_.Sub("script.js");
    spec.args = std::move(probe_args);
    spec.envp = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    spec.switch_ids = true;
    spec.uid = kNobody;
    spec.gid = kNobody;
    spec.limits = kDefaultRunLimits;
    SetSeccomp(spec, true);
    return spec;
  }

  Launch LaunchFor(const RunSpec& spec) {
    Launch l;
    l.spec_bytes = EncodeRunSpec(spec).value();
    l.program_path = ProbePath();
    l.script_path = dir_.Sub("script.js");
    l.dir_path = dir_.path();
    return l;
  }

  LaunchResult Probe(const RunSpec& spec) { return RunWorker(LaunchFor(spec)); }

  // A namespaced run of the probe leaving a child behind (`mode`: orphan, or orphan-out,
  // which keeps stdout), seccomp off so that the child may leave the run's process group.
  RunSpec NamespacedOrphanSpec(const std::string& mode, const std::string& token) {
    RunSpec spec = ProbeSpec({mode, token});
    SetSeccomp(spec, false);
    spec.namespaces = true;
    spec.skill_dir_path = dir_.path();
    return spec;
  }

  TempDir dir_;
};

// The worker failed at `step` and said so both ways: the report on fd 4 and the exit code.
void ExpectStep(const LaunchResult& r, WorkerStep step, int err) {
  ASSERT_TRUE(r.failure.has_value()) << r.Describe();
  EXPECT_EQ(r.failure->step, static_cast<int32_t>(step)) << r.Describe();
  EXPECT_EQ(r.failure->err, err) << strerror(r.failure->err) << "\n" << r.Describe();
  EXPECT_EQ(r.ExitCode(), static_cast<int>(step)) << r.Describe();
}

TEST_F(WorkerTest, SwitchedIdentityNoCapabilitiesNoNewPrivsSeccompAndLimits) {
  const LaunchResult r = Probe(ProbeSpec({"status"}));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_FALSE(r.failure.has_value());
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "65534 65534 65534 65534");
  EXPECT_EQ(kv["Gid"], "65534 65534 65534 65534");
  EXPECT_EQ(kv["Groups"], "");  // the launcher gave the "broker" groups 4 27 100
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(kv[set], kZeroCaps) << set;
  EXPECT_EQ(kv["NoNewPrivs"], "1");
  EXPECT_EQ(kv["Seccomp"], "2");
  // NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE set, KEEP_CAPS off, all four locked.
  EXPECT_EQ(kv["Securebits"], "0xef");
  EXPECT_EQ(kv["RLIMIT_NPROC"], "256 256");
  EXPECT_EQ(kv["RLIMIT_AS"], std::to_string(16 * kGiB) + " " + std::to_string(16 * kGiB));
  EXPECT_EQ(kv["RLIMIT_DATA"], std::to_string(kGiB) + " " + std::to_string(kGiB));
  EXPECT_EQ(kv["RLIMIT_CPU"], "300 301");
  EXPECT_EQ(kv["RLIMIT_FSIZE"], std::to_string(256 * kMiB) + " " + std::to_string(256 * kMiB));
  EXPECT_EQ(kv["RLIMIT_NOFILE"], "1024 1024");
  EXPECT_EQ(kv["RLIMIT_CORE"], "0 0");
  // Only stdio, the open script and the sealed bootstrap reach the program (node's
  // bootstrap closes 6 and 8): status, interpreter, spec and skill-dir descriptors are gone.
  // (A /package.json makes the worker take node -e, without 8: worker/exec.cc.)
  EXPECT_EQ(kv["Fds"], access("/package.json", F_OK) == 0 ? "0 1 2 6" : "0 1 2 6 8");
  EXPECT_EQ(kv["Cwd"], dir_.path());
  // The worker leads the session and group and stays as the run's mirror (worker/cell.h).
  EXPECT_EQ(kv["Sid"], "member");
  EXPECT_EQ(kv["Pgid"], "member");
  // The launcher blocked SIGTERM and ignored SIGPIPE like a broker might: reset.
  EXPECT_EQ(kv["SigBlk"], kZeroCaps);
  EXPECT_EQ(kv["SigIgn"], kZeroCaps);
}

// ---- the run's own namespaces (worker/namespaces.h) ----------------------------------

// A namespaced spec for the probe; SKIPs the caller when this host refuses user
// namespaces to the run-as uid (then the layer is reported off and runs are refused).
#define SKIP_WITHOUT_USER_NAMESPACES(r)                                                   \
  if ((r).failure && (r).failure->step == static_cast<int32_t>(WorkerStep::kUserNamespace)) \
  GTEST_SKIP() << "this host refuses a user namespace to uid " << kNobody << ": "         \
               << strerror((r).failure->err)

TEST_F(WorkerTest, NamespacedRunSeesItsBoundSkillDirAndHasNoBoundingSet) {
  RunSpec spec = ProbeSpec({"status"});
  spec.namespaces = true;
  spec.skill_dir_path = dir_.path();
  spec.hidden_roots = {"/tmp"};
  const LaunchResult r = Probe(spec);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Cwd"], dir_.path());
  EXPECT_EQ(kv["CapBnd"], kZeroCaps) << "the namespace's CAP_SETPCAP empties the bounding set";
  EXPECT_EQ(kv["CapEff"], kZeroCaps);
  EXPECT_EQ(kv["Uid"], "65534 65534 65534 65534");
  // The user namespace reset the securebits to the unlocked default: locked again in it.
  EXPECT_EQ(kv["Securebits"], "0xef");
}

// A directory outside every place a run's view hides (/tmp, /var/tmp, homes, /run ...),
// removed with its tree; the worker tests run as root.
class HostDir {
 public:
  HostDir() {
    char tmpl[] = "/var/cache/skill-mcp-worker-test-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
    chmod(path_.c_str(), 0755);
  }
  ~HostDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  std::string Sub(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// The view is read-only but for the run's own places: a 0666 file outside cannot be
// written (EROFS), while the run's /tmp, its scratch directory and MCP_DATA_DIR, here
// under the hidden /tmp, can (the positive control in the same run).
TEST_F(WorkerTest, NamespacedViewIsReadOnlyButForTheRunsOwnPlaces) {
  HostDir host;
  WriteFile(host.Sub("open"), "anyone may write this\n", 0666);
  for (const char* d : {"skill", "data", "scratch"}) {
    ASSERT_EQ(mkdir(dir_.Sub(d).c_str(), 0777), 0);
    ASSERT_EQ(chmod(dir_.Sub(d).c_str(), 0777), 0);  // past the umask
  }
  chmod(dir_.path().c_str(), 0755);
  RunSpec spec = ProbeSpec({"create", host.Sub("open"), dir_.Sub("data/new"),
                            dir_.Sub("scratch/new"), "/tmp/new", dir_.Sub("skill/new")});
  spec.namespaces = true;
  spec.skill_dir_path = dir_.Sub("skill");
  spec.data_dir_path = dir_.Sub("data");
  spec.scratch_dir_path = dir_.Sub("scratch");
  Launch l = LaunchFor(spec);
  l.dir_path = dir_.Sub("skill");
  const LaunchResult r = RunWorker(l);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{
                              host.Sub("open") + " EROFS", dir_.Sub("data/new") + " ok",
                              dir_.Sub("scratch/new") + " ok", "/tmp/new ok",
                              dir_.Sub("skill/new") + " EROFS"}))
      << r.out;
  // Control: without namespaces the same file outside is written (no view, no Landlock).
  RunSpec plain = ProbeSpec({"create", host.Sub("open")});
  const LaunchResult open = Probe(plain);
  ASSERT_EQ(open.ExitCode(), 0) << open.Describe();
  EXPECT_EQ(Lines(open.out), std::vector<std::string>{host.Sub("open") + " ok"}) << open.out;
}

// MCP_DATA_DIR is bound writable only at the directory its real path names: a path through
// a symlink (swapped in after the broker resolved it) binds nothing, so the directory the
// link reaches stays read-only; its real path is bound (control).
TEST_F(WorkerTest, NamespacedRunBindsNoDataDirReachedThroughALink) {
  HostDir host;
  ASSERT_EQ(mkdir(host.Sub("real").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(host.Sub("real/data").c_str(), 0777), 0);
  ASSERT_EQ(chmod(host.Sub("real/data").c_str(), 0777), 0);  // past the umask
  ASSERT_EQ(symlink(host.Sub("real").c_str(), host.Sub("via").c_str()), 0);
  for (const auto& [data, want] : {std::pair<std::string, std::string>{"via/data", "EROFS"},
                                   {"real/data", "ok"}}) {
    RunSpec spec = ProbeSpec({"create", host.Sub(data + "/new")});
    spec.namespaces = true;
    spec.skill_dir_path = dir_.path();
    spec.data_dir_path = host.Sub(data);
    const LaunchResult r = Probe(spec);
    SKIP_WITHOUT_USER_NAMESPACES(r);
    ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
    EXPECT_EQ(Lines(r.out), std::vector<std::string>{host.Sub(data + "/new") + " " + want})
        << data << ": " << r.out;
  }
}

// Node installed beneath a hidden place (a per-user install under a home): its prefix alone
// is bound back, so node still starts under Landlock, while the rest of the place stays
// hidden. The probe, copied there, takes node's place.
TEST_F(WorkerTest, NamespacedRunKeepsNodesPrefixAloneFromAHiddenPlace) {
  const int abi = landlock::ProbeAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock: node's prefix is bound for its rule";
  HostDir host;
  ASSERT_EQ(mkdir(host.Sub("node").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(host.Sub("node/bin").c_str(), 0755), 0);
  std::filesystem::copy_file(ProbePath(), host.Sub("node/bin/node"));
  ASSERT_EQ(chmod(host.Sub("node/bin/node").c_str(), 0755), 0);
  WriteFile(host.Sub("secret"), "not for runs\n", 0644);
  RunSpec spec = ProbeSpec({"open", host.Sub("node/bin/node"), host.Sub("secret")});
  spec.namespaces = true;
  spec.skill_dir_path = dir_.path();
  spec.hidden_roots = {host.Sub("")};
  spec.hidden_roots[0].pop_back();  // the place itself, without its trailing '/'
  spec.landlock_abi = std::min<uint32_t>(static_cast<uint32_t>(abi), landlock::kKnownAbi);
  spec.node_dir_path = host.Sub("node");
  Launch l = LaunchFor(spec);
  l.program_path = host.Sub("node/bin/node");
  const LaunchResult r = RunWorker(l);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{host.Sub("node/bin/node") + " ok",
                                                    host.Sub("secret") + " ENOENT"}))
      << r.out;
}

// An MCP_DATA_DIR that is a hidden place itself is not bound back: the place would come
// back whole and writable. The same directory beneath no hidden place is (control).
TEST_F(WorkerTest, NamespacedRunBindsNoDataDirThatIsAHiddenPlace) {
  HostDir host;
  ASSERT_EQ(mkdir(host.Sub("home").c_str(), 0777), 0);
  ASSERT_EQ(chmod(host.Sub("home").c_str(), 0777), 0);  // past the umask
  for (const bool hidden : {true, false}) {
    RunSpec spec = ProbeSpec({"create", host.Sub("home/new")});
    spec.namespaces = true;
    spec.skill_dir_path = dir_.path();
    if (hidden) spec.hidden_roots = {host.Sub("home")};
    spec.data_dir_path = host.Sub("home");
    const LaunchResult r = Probe(spec);
    SKIP_WITHOUT_USER_NAMESPACES(r);
    ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
    EXPECT_EQ(Lines(r.out), std::vector<std::string>{host.Sub("home/new") +
                                                     (hidden ? " EROFS" : " ok")})
        << (hidden ? "a hidden place" : "no place") << ": " << r.out;
  }
}

// Root without a uid switch, namespaced: uid 0 maps onto itself in the run's namespace,
// so the securebits locked there are what keeps exec from granting it anything.
TEST_F(WorkerTest, NamespacedRootWithoutSwitchHasLockedSecurebits) {
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  spec.namespaces = true;
  spec.skill_dir_path = dir_.path();
  spec.hidden_roots = {"/tmp"};
  const LaunchResult r = Probe(spec);
  if (r.failure && r.failure->step == static_cast<int32_t>(WorkerStep::kUserNamespace))
    GTEST_SKIP() << "this host refuses a user namespace to root: " << strerror(r.failure->err);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "0 0 0 0");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(kv[set], kZeroCaps) << set;
  EXPECT_EQ(kv["Securebits"], "0xef");
}

// An ordinary user's broker has no CAP_SETPCAP and locks nothing at kSecurebits; in its own
// user namespace it holds the capability, so a namespaced run's securebits are locked.
TEST_F(WorkerTest, UnprivilegedNamespacedRunHasLockedSecurebits) {
  if (access(ProbePath(), R_OK) != 0) GTEST_SKIP() << "probe not reachable";
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  spec.namespaces = true;
  spec.skill_dir_path = dir_.path();
  spec.hidden_roots = {"/tmp"};
  Launch l = LaunchFor(spec);
  l.broker_uid = 65533;
  const LaunchResult r = RunWorker(l);
  if (r.SpawnFailed(EACCES))
    GTEST_SKIP() << "the worker binary is not executable by uid 65533 here";
  if (r.failure && r.failure->step == static_cast<int32_t>(WorkerStep::kUserNamespace))
    GTEST_SKIP() << "this host refuses a user namespace to uid 65533: " << strerror(r.failure->err);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "65533 65533 65533 65533");
  EXPECT_EQ(kv["CapBnd"], kZeroCaps);
  EXPECT_EQ(kv["CapEff"], kZeroCaps);
  EXPECT_EQ(kv["Securebits"], "0xef");
}

// Host processes (not zombies) whose command line holds `token`.
std::vector<pid_t> Carrying(const std::string& token) {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    std::string st((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close_paren = st.rfind(") ");
    const bool zombie = close_paren != std::string::npos && st.compare(close_paren + 2, 1, "Z") == 0;
    if (!zombie && argv.find(std::string(1, '\0') + token + '\0') != std::string::npos)
      found.push_back(pid);
  }
  if (d) closedir(d);
  return found;
}

// With namespaces the run's first process is its pid namespace's only way to live on:
// when it exits, a child it left behind dies with it, by the kernel, with no broker to
// sweep it up. Without namespaces (the control) the child lives on.
// Seccomp off, so the child can leave the run's process group (the launcher kills that).
TEST_F(WorkerTest, ALeftBehindChildDiesWhenTheRunsFirstProcessExits) {
  const std::string token = "skill-mcp-orphan-" + std::to_string(getpid());
  const LaunchResult r = Probe(NamespacedOrphanSpec("orphan", token));
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_TRUE(Carrying(token).empty()) << "the orphan outlived the run's first process";

  RunSpec off = ProbeSpec({"orphan", token});
  SetSeccomp(off, false);
  const LaunchResult control = Probe(off);
  ASSERT_EQ(control.ExitCode(), 0) << control.Describe();
  const std::vector<pid_t> left = Carrying(token);
  EXPECT_FALSE(left.empty()) << "without namespaces the orphan lives on (control)";
  for (pid_t pid : left) kill(pid, SIGKILL);
}

// The run's end (a WorkerExit on fd 4, on which the broker answers without waiting for
// the worker's exit) comes only once nothing of the run is left: init kills and reaps
// what node left in its namespace first. The orphan holds stdout, so a live one shows as
// a writer still there when the end is read. A few runs: without init's sweep the end
// would race the kernel's teardown and lose only sometimes.
TEST_F(WorkerTest, TheRunsEndIsReportedOnlyOnceNothingOfTheRunIsLeft) {
  for (int i = 0; i < 5; ++i) {
    const std::string token = "skill-mcp-orphan-out-" + std::to_string(getpid());
    const LaunchResult r = Probe(NamespacedOrphanSpec("orphan-out", token));
    SKIP_WITHOUT_USER_NAMESPACES(r);
    ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
    ASSERT_TRUE(r.end.has_value()) << r.Describe();
    EXPECT_EQ(r.end->code, CLD_EXITED);
    EXPECT_EQ(r.end->value, 0);
    EXPECT_FALSE(r.out_held_at_end) << "the orphan was alive when the run's end was reported";
    EXPECT_TRUE(Carrying(token).empty());
  }
}

// Without namespaces the mirror reports the end once it has reaped node, with node's own
// status (the broker then kills the group and sweeps what it left).
TEST_F(WorkerTest, WithoutNamespacesTheMirrorReportsNodesEnd) {
  const LaunchResult r = Probe(ProbeSpec({"status"}));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  ASSERT_TRUE(r.end.has_value()) << r.Describe();
  EXPECT_EQ(r.end->code, CLD_EXITED);
  EXPECT_EQ(r.end->value, 0);
  EXPECT_FALSE(r.failure.has_value()) << r.Describe();
}

// A step that fails in node's process is reported, and then the run's end with that
// step's exit code: the report comes first on fd 4, and the broker trusts it first.
TEST_F(WorkerTest, NodesFailedStepIsReportedBeforeTheRunsEnd) {
  WriteFile(dir_.Sub("not-a-program"), "just text\n", 0644);
  for (bool namespaced : {false, true}) {
    SCOPED_TRACE(namespaced ? "namespaced" : "without namespaces");
    RunSpec spec = ProbeSpec({"status"});
    spec.namespaces = namespaced;
    if (namespaced) spec.skill_dir_path = dir_.path();
    Launch l = LaunchFor(spec);
    l.program_path = dir_.Sub("not-a-program");
    const LaunchResult r = RunWorker(l);
    if (namespaced) SKIP_WITHOUT_USER_NAMESPACES(r);
    ExpectStep(r, WorkerStep::kExec, EACCES);
    ASSERT_TRUE(r.end.has_value()) << r.Describe();
    EXPECT_EQ(r.end->code, CLD_EXITED);
    EXPECT_EQ(r.end->value, static_cast<int>(WorkerStep::kExec));
  }
}

// A step that fails before the run's processes exist ends the worker with no end reported.
TEST_F(WorkerTest, AWorkerThatFailsBeforeTheRunReportsNoEnd) {
  RunSpec spec = ProbeSpec({"status"});
  spec.uid = 0;  // refused before the fork
  const LaunchResult r = Probe(spec);
  ExpectStep(r, WorkerStep::kRefuseRootIds, EPERM);
  EXPECT_FALSE(r.end.has_value()) << r.Describe();
}

// The directory bound into the view must be the one the broker checked (fd 7): a path
// that now names another directory is refused, never bound.
// The node_modules in and beside a skills root are bound back into the view; one that
// is a symlink is never followed (its target stays hidden with the rest of /tmp).
TEST_F(WorkerTest, NamespacedRunSeesItsModuleDirsButNoSymlinkedOne) {
  const std::string root = dir_.Sub("root");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/skill").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/node_modules").c_str(), 0755), 0);
  WriteFile(root + "/node_modules/index.js", "module.exports = 1;\n");
  ASSERT_EQ(mkdir(dir_.Sub("elsewhere").c_str(), 0755), 0);
  WriteFile(dir_.Sub("elsewhere/secret"), "s\n");
  ASSERT_EQ(symlink(dir_.Sub("elsewhere").c_str(), dir_.Sub("node_modules").c_str()), 0);
  chmod(dir_.path().c_str(), 0755);
  RunSpec spec = ProbeSpec({"open", root + "/node_modules/index.js",
                            dir_.Sub("node_modules/secret"), dir_.Sub("elsewhere/secret")});
  spec.namespaces = true;
  spec.skill_dir_path = root + "/skill";
  spec.hidden_roots = {"/tmp", root};
  spec.read_dirs = {CheckedModuleDir(root + "/node_modules"),
                    CheckedModuleDir(dir_.Sub("node_modules"))};
  Launch l = LaunchFor(spec);
  l.dir_path = root + "/skill";
  const LaunchResult r = RunWorker(l);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{root + "/node_modules/index.js ok",
                                                    dir_.Sub("node_modules/secret") + " ENOENT",
                                                    dir_.Sub("elsewhere/secret") + " ENOENT"}))
      << r.out;
}

// No component of a module directory's path is followed if a symlink (a linked parent
// reaches the same directory, yet is not bound), and one others may write is not bound;
// the real path of a directory others cannot write is (control).
TEST_F(WorkerTest, NamespacedRunBindsNoModuleDirReachedByALinkOrWritableByOthers) {
  const std::string root = dir_.Sub("root");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/skill").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/node_modules").c_str(), 0755), 0);
  WriteFile(root + "/node_modules/index.js", "module.exports = 1;\n");
  ASSERT_EQ(mkdir(dir_.Sub("open").c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir_.Sub("open").c_str(), 0777), 0);
  WriteFile(dir_.Sub("open/index.js"), "module.exports = 2;\n");
  ASSERT_EQ(symlink(root.c_str(), dir_.Sub("via").c_str()), 0);
  chmod(dir_.path().c_str(), 0755);
  const std::string linked = dir_.Sub("via/node_modules/index.js");
  RunSpec spec = ProbeSpec({"open", linked, dir_.Sub("open/index.js"),
                            root + "/node_modules/index.js"});
  spec.namespaces = true;
  spec.skill_dir_path = root + "/skill";
  spec.hidden_roots = {"/tmp", root};
  spec.read_dirs = {CheckedModuleDir(dir_.Sub("via/node_modules")),
                    CheckedModuleDir(dir_.Sub("open")), CheckedModuleDir(root + "/node_modules")};
  Launch l = LaunchFor(spec);
  l.dir_path = root + "/skill";
  const LaunchResult r = RunWorker(l);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(Lines(r.out), (std::vector<std::string>{linked + " ENOENT",
                                                    dir_.Sub("open/index.js") + " ENOENT",
                                                    root + "/node_modules/index.js ok"}))
      << r.out;
}

// A node_modules directory renamed into the checked one's place after the broker's check
// (same path, another inode) is not bound into the view, and the run goes on; control: the
// checked directory, back in its place, is bound.
TEST_F(WorkerTest, NamespacedRunBindsNoModuleDirSwappedSinceTheBrokersCheck) {
  const std::string root = dir_.Sub("root");
  ASSERT_EQ(mkdir(root.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/skill").c_str(), 0755), 0);
  const std::string modules = root + "/node_modules";
  ASSERT_EQ(mkdir(modules.c_str(), 0755), 0);
  WriteFile(modules + "/index.js", "module.exports = 1;\n");
  ASSERT_EQ(mkdir(dir_.Sub("swapped").c_str(), 0755), 0);
  WriteFile(dir_.Sub("swapped/index.js"), "module.exports = 2;\n");
  chmod(dir_.path().c_str(), 0755);
  RunSpec spec = ProbeSpec({"open", modules + "/index.js"});
  spec.namespaces = true;
  spec.skill_dir_path = root + "/skill";
  spec.hidden_roots = {"/tmp", root};
  spec.read_dirs = {CheckedModuleDir(modules)};
  Launch l = LaunchFor(spec);
  l.dir_path = root + "/skill";
  ASSERT_EQ(rename(modules.c_str(), dir_.Sub("checked").c_str()), 0);
  ASSERT_EQ(rename(dir_.Sub("swapped").c_str(), modules.c_str()), 0);
  const LaunchResult r = RunWorker(l);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, modules + "/index.js ENOENT\n") << "the swapped-in directory is bound";

  ASSERT_EQ(rename(modules.c_str(), dir_.Sub("swapped").c_str()), 0);
  ASSERT_EQ(rename(dir_.Sub("checked").c_str(), modules.c_str()), 0);
  const LaunchResult control = RunWorker(l);
  ASSERT_EQ(control.ExitCode(), 0) << control.Describe();
  EXPECT_EQ(control.out, modules + "/index.js ok\n") << "the checked directory is bound";
}

TEST_F(WorkerTest, NamespacedRunRefusesASkillPathThatIsNotTheCheckedDirectory) {
  TempDir elsewhere;
  RunSpec spec = ProbeSpec({"status"});
  spec.namespaces = true;
  spec.skill_dir_path = elsewhere.path();
  const LaunchResult r = Probe(spec);
  SKIP_WITHOUT_USER_NAMESPACES(r);
  ExpectStep(r, WorkerStep::kMountView, ESTALE);
}

// The worker loads the broker's program as is; one the kernel refuses is a failed
// setup step, never a run without the filter.
TEST_F(WorkerTest, AProgramTheKernelRefusesFailsTheSeccompStep) {
  RunSpec spec = ProbeSpec({"status"});
  spec.seccomp_bpf = std::string(16, '\xff');  // two records of an undefined opcode
  ExpectStep(Probe(spec), WorkerStep::kSeccomp, EINVAL);
}

TEST_F(WorkerTest, TheDropCannotBeUndone) {
  const LaunchResult r = Probe(ProbeSpec({"setuid0"}));
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "setresuid EPERM setresgid EPERM\n");
}

TEST_F(WorkerTest, LimitsOfZeroAreLeftAsInheritedButCoreIsAlwaysZero) {
  RunSpec spec = ProbeSpec({"status"});
  spec.limits = RunLimits{};
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["RLIMIT_CORE"], "0 0");
  EXPECT_EQ(kv["RLIMIT_AS"], "unlimited unlimited");
}

TEST_F(WorkerTest, EnvironmentIsExactlyTheSpecBlock) {
  RunSpec spec = ProbeSpec({"env"});
  spec.envp = {"PATH=/usr/bin", "HOME=/nonexistent", "WITH_SPACE=a b  c", "EMPTY=", "Z_LAST=1"};
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(Lines(r.out), spec.envp);  // same entries, same order, nothing of the worker's
  EXPECT_EQ(r.out.find("WORKER_ONLY_SECRET"), std::string::npos);
}

TEST_F(WorkerTest, SeccompFlagOffLeavesNoFilter) {
  RunSpec spec = ProbeSpec({"status"});
  SetSeccomp(spec, false);
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(KeyValues(r.out)["Seccomp"], "0");
}

// Root without a uid switch: securebits lock root out of capabilities at exec and the
// bounding set is emptied, so even uid 0 execs with nothing.
TEST_F(WorkerTest, RootWithoutSwitchExecsWithoutAnyCapability) {
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "0 0 0 0");
  EXPECT_EQ(kv["Groups"], "4 27 100");  // no switch: groups are the broker's business
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(kv[set], kZeroCaps) << set;
  EXPECT_EQ(kv["Securebits"], "0xef");  // uid 0 gains nothing at any later exec
}

// Measured (docs/isolation.md): ambient capabilities survive a non-root to non-root uid change. A
// broker started with AmbientCapabilities= must not hand them to the script.
TEST_F(WorkerTest, AmbientCapabilitiesOfANonRootBrokerAreCleared) {
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  Launch l = LaunchFor(spec);
  l.broker_uid = 65533;
  l.broker_ambient_caps = {CAP_NET_BIND_SERVICE, CAP_SETPCAP};
  const LaunchResult r = RunWorker(l);
  if (r.SpawnFailed(EACCES)) GTEST_SKIP() << "the worker binary is not executable by uid 65533 here";
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "65533 65533 65533 65533");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_EQ(kv[set], kZeroCaps) << set;
  EXPECT_EQ(kv["CapBnd"], kZeroCaps);  // it held CAP_SETPCAP, so the bounding set went too
  EXPECT_EQ(kv["NoNewPrivs"], "1");
}

TEST_F(WorkerTest, InterpreterReplacedAfterOpenStillExecsThePinnedBinary) {
  const std::string prog = dir_.Sub("prog");
  {
    std::ifstream in(ProbePath(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    WriteFile(prog, bytes, 0755);
  }
  const int fd = open(prog.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(unlink(prog.c_str()), 0);
  WriteFile(prog, "#!/bin/sh\necho swapped\n", 0755);
  Launch l = LaunchFor(ProbeSpec({"args", "x"}));
  l.program_fd = fd;
  const LaunchResult r = RunWorker(l);
  close(fd);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "[" + dir_.Sub("script.js") + "]\n[args]\n[x]\n");
}

TEST_F(WorkerTest, MissingStdinFailsCheckFds) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.close_stdin = true;
  ExpectStep(RunWorker(l), WorkerStep::kCheckFds, EBADF);
}

// An unprivileged broker (plain local user) cannot drop the bounding set; the worker
// goes on because no_new_privs makes the bounding set unreachable for a non-root uid.
TEST_F(WorkerTest, UnprivilegedBrokerRunsWithNoNewPrivsAndNoCapabilities) {
  struct stat st;
  ASSERT_EQ(stat(WorkerPath(), &st), 0);
  if (access(ProbePath(), R_OK) != 0) GTEST_SKIP() << "probe not reachable";
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  Launch l = LaunchFor(spec);
  l.broker_uid = 65533;
  const LaunchResult r = RunWorker(l);
  if (r.SpawnFailed(EACCES)) GTEST_SKIP() << "the worker binary is not executable by uid 65533 here";
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "65533 65533 65533 65533");
  EXPECT_NE(kv["CapBnd"], kZeroCaps);  // could not be dropped, tolerated
  EXPECT_EQ(kv["CapEff"], kZeroCaps);
  EXPECT_EQ(kv["CapPrm"], kZeroCaps);
  EXPECT_EQ(kv["NoNewPrivs"], "1");
  EXPECT_EQ(kv["Seccomp"], "2");
}

// A root worker that cannot empty its bounding set would get it back at exec: fatal.
TEST_F(WorkerTest, RootThatCannotDropTheBoundingSetIsRefused) {
  RunSpec spec = ProbeSpec({"status"});
  spec.switch_ids = false;
  Launch l = LaunchFor(spec);
  l.root_keeps_only_caps = std::vector<int>{};
  ExpectStep(RunWorker(l), WorkerStep::kDropBounding, EPERM);
}

// The same broker may still run scripts when it switches to a non-root uid.
TEST_F(WorkerTest, RootWithoutSetpcapStillRunsWhenSwitching) {
  // Like podman --cap-drop=ALL --cap-add=SETUID,SETGID: no CAP_SETPCAP, so neither the
  // securebits nor the bounding set can be touched, and the ambient set is not empty.
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.root_keeps_only_caps = std::vector<int>{CAP_SETUID, CAP_SETGID};
  const LaunchResult r = RunWorker(l);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["Uid"], "65534 65534 65534 65534");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_EQ(kv[set], kZeroCaps) << set;
  EXPECT_NE(kv["CapBnd"], kZeroCaps);  // could not be dropped; no_new_privs covers it
  // Only the launcher's own unlocked NOROOT: nothing could be locked without CAP_SETPCAP.
  EXPECT_EQ(kv["Securebits"], "0x1");
  EXPECT_EQ(kv["NoNewPrivs"], "1");
}

// ---- each setup step reports itself -------------------------------------------------

TEST_F(WorkerTest, GarbageSpecFailsReadSpec) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.spec_bytes = "this is not a run spec";
  ExpectStep(RunWorker(l), WorkerStep::kReadSpec, EINVAL);
}

TEST_F(WorkerTest, EmptySpecFailsReadSpec) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.spec_bytes.clear();
  ExpectStep(RunWorker(l), WorkerStep::kReadSpec, EINVAL);
}

TEST_F(WorkerTest, OversizedSpecFailsReadSpec) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.spec_bytes.append(kRunSpecMaxBytes, 'x');
  ExpectStep(RunWorker(l), WorkerStep::kReadSpec, EMSGSIZE);
}

TEST_F(WorkerTest, MissingScriptFdFailsCheckFds) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.script_path.clear();
  ExpectStep(RunWorker(l), WorkerStep::kCheckFds, EBADF);
}

TEST_F(WorkerTest, MissingSkillDirFdFailsCheckFds) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.dir_path.clear();
  ExpectStep(RunWorker(l), WorkerStep::kCheckFds, EBADF);
}

TEST_F(WorkerTest, ScriptFdThatIsADirectoryFailsCheckFds) {
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.script_path = dir_.path();
  ExpectStep(RunWorker(l), WorkerStep::kCheckFds, EINVAL);
}

TEST_F(WorkerTest, TargetUidZeroIsRefused) {
  RunSpec spec = ProbeSpec({"status"});
  spec.uid = 0;
  ExpectStep(Probe(spec), WorkerStep::kRefuseRootIds, EPERM);
}

TEST_F(WorkerTest, TargetGidZeroIsRefused) {
  RunSpec spec = ProbeSpec({"status"});
  spec.gid = 0;
  ExpectStep(Probe(spec), WorkerStep::kRefuseRootIds, EPERM);
}

TEST_F(WorkerTest, TargetEqualToTheBrokerUidIsRefused) {
  RunSpec spec = ProbeSpec({"status"});
  spec.uid = 65533;
  spec.gid = 65532;
  Launch l = LaunchFor(spec);
  l.broker_uid = 65533;  // an unprivileged broker cannot switch anyway; refused first
  const LaunchResult r = RunWorker(l);
  if (r.SpawnFailed(EACCES)) GTEST_SKIP() << "the worker binary is not executable by uid 65533 here";
  ExpectStep(r, WorkerStep::kRefuseRootIds, EINVAL);
}

TEST_F(WorkerTest, UnprivilegedBrokerAskingForASwitchFailsAtSetGroups) {
  RunSpec spec = ProbeSpec({"status"});
  Launch l = LaunchFor(spec);
  l.broker_uid = 65533;
  const LaunchResult r = RunWorker(l);
  if (r.SpawnFailed(EACCES)) GTEST_SKIP() << "the worker binary is not executable by uid 65533 here";
  ExpectStep(r, WorkerStep::kSetGroups, EPERM);
}

TEST_F(WorkerTest, SkillDirTheRunAsUidCannotEnterFailsChdir) {
  TempDir closed;
  chmod(closed.path().c_str(), 0700);
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.dir_path = closed.path();
  ExpectStep(RunWorker(l), WorkerStep::kChdir, EACCES);
}

TEST_F(WorkerTest, AMissingScratchDirectoryFailsTheLandlockStep) {
  const int abi = landlock::ProbeAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock";
  RunSpec spec = ProbeSpec({"status"});
  spec.landlock_abi = std::min<uint32_t>(static_cast<uint32_t>(abi), landlock::kKnownAbi);
  spec.node_dir_path = "/usr";
  spec.scratch_dir_path = dir_.Sub("no-such-scratch");
  ExpectStep(RunWorker(LaunchFor(spec)), WorkerStep::kLandlock, ENOENT);
}

// Without namespaces node's process enters the Landlock domain itself and the mirror
// stays outside it: with signal scoping (ABI 6) the script cannot signal, so cannot stop,
// the mirror, which must act to kill the run's group when the broker dies.
TEST_F(WorkerTest, WithoutNamespacesTheScriptCannotSignalTheMirror) {
  const int abi = landlock::ProbeAbi();
  if (abi < 6) GTEST_SKIP() << "signal scoping needs Landlock ABI 6 (this kernel: " << abi << ")";
  RunSpec spec = ProbeSpec({"sigparent"});
  spec.landlock_abi = std::min<uint32_t>(static_cast<uint32_t>(abi), landlock::kKnownAbi);
  const std::string probe = ProbePath();
  spec.node_dir_path = probe.substr(0, probe.rfind('/'));  // the probe execs in node's place
  spec.scratch_dir_path = dir_.Sub("scratch");
  ASSERT_EQ(mkdir(spec.scratch_dir_path.c_str(), 0700), 0);
  ASSERT_FALSE(spec.namespaces);
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "kill parent EPERM\n");
}

TEST_F(WorkerTest, NonExecutableInterpreterFailsExec) {
  WriteFile(dir_.Sub("not-a-program"), "just text\n", 0644);
  Launch l = LaunchFor(ProbeSpec({"status"}));
  l.program_path = dir_.Sub("not-a-program");
  ExpectStep(RunWorker(l), WorkerStep::kExec, EACCES);
}

TEST(WorkerSteps, DescriptionsAndExitCodesCoverEveryStep) {
  for (int code = kWorkerStepFirst; code <= kWorkerStepLast; ++code) {
    auto step = WorkerStepFromCode(code);
    if (!step) continue;
    EXPECT_STRNE(DescribeWorkerStep(*step), "complete an unknown setup step") << code;
  }
  EXPECT_FALSE(WorkerStepFromCode(0).has_value());
  EXPECT_FALSE(WorkerStepFromCode(1).has_value());
  EXPECT_FALSE(WorkerStepFromCode(137).has_value());
  EXPECT_EQ(WorkerStepFromCode(200), WorkerStep::kSpawn);
  EXPECT_EQ(WorkerStepFromCode(201), WorkerStep::kReadSpec);
}

// ---- the seccomp policy in force on the exec'd program ------------------------------

using Row = probe::SyscallRow;

TEST_F(WorkerTest, MustDenyTable) {
  std::vector<Row> rows(std::begin(probe::kMustDeny), std::end(probe::kMustDeny));
  rows.insert(rows.end(), std::begin(probe::kMustAllow), std::end(probe::kMustAllow));
  for (const Row& row : rows) {
    const LaunchResult r = Probe(ProbeSpec({"call", row.call}));
    if (std::string(row.expected) == "SIGSYS") {
      EXPECT_EQ(r.Signal(), SIGSYS) << row.call << "\n" << r.Describe();
    } else {
      EXPECT_EQ(r.ExitCode(), 0) << row.call << "\n" << r.Describe();
      EXPECT_EQ(r.out, std::string(row.call) + " " + row.expected + "\n") << r.Describe();
    }
  }
}

TEST_F(WorkerTest, I386SyscallThroughInt80KillsTheProcess) {
  RunSpec spec = ProbeSpec({"int80"});
  SetSeccomp(spec, false);
  const LaunchResult baseline = Probe(spec);
  if (baseline.out.rfind("int80 returned", 0) != 0)
    GTEST_SKIP() << "no i386 emulation on this kernel: " << baseline.Describe();
  const LaunchResult r = Probe(ProbeSpec({"int80"}));
  EXPECT_EQ(r.Signal(), SIGSYS) << r.Describe();
}

TEST_F(WorkerTest, X32SyscallNumberKillsTheProcess) {
  const LaunchResult r = Probe(ProbeSpec({"x32"}));
  EXPECT_EQ(r.Signal(), SIGSYS) << r.Describe();
}

// ---- resource limits stop the bombs ---------------------------------------------------

TEST_F(WorkerTest, ForkBombStopsAtNproc) {
  RunSpec spec = ProbeSpec({"forkbomb"});
  // A uid nothing else on this machine runs as, so the count is ours alone.
  spec.uid = spec.gid = 61000 + static_cast<uint32_t>(getpid() % 1000);
  spec.limits.nproc = 20;
  const LaunchResult r = Probe(spec);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  ASSERT_EQ(r.out.rfind("forked ", 0), 0u) << r.Describe();
  const int forked = std::stoi(r.out.substr(7));
  EXPECT_LT(forked, 20) << r.Describe();
  EXPECT_NE(r.out.find("errno EAGAIN"), std::string::npos) << r.Describe();
}

TEST_F(WorkerTest, MemoryBombStopsAtData) {
  RunSpec spec = ProbeSpec({"membomb", "512"});
  spec.limits.data = 64 * kMiB;
  const LaunchResult r = Probe(spec);
  ASSERT_EQ(r.ExitCode(), 3) << r.Describe();
  const long got = std::stol(r.out.substr(std::string("allocated ").size()));
  EXPECT_LT(got, 64) << r.Describe();
}

TEST_F(WorkerTest, GigabyteWriteStopsAtFsize) {
  TempDir out;
  chmod(out.path().c_str(), 0777);
  RunSpec spec = ProbeSpec({"write", out.Sub("big"), "1024"});
  spec.limits.fsize = 16 * kMiB;
  const LaunchResult r = Probe(spec);
  EXPECT_EQ(r.Signal(), SIGXFSZ) << r.Describe();
  struct stat st;
  ASSERT_EQ(stat(out.Sub("big").c_str(), &st), 0);
  EXPECT_LE(st.st_size, static_cast<off_t>(16 * kMiB));
}

TEST_F(WorkerTest, CpuSpinStopsAtRlimitCpu) {
  RunSpec spec = ProbeSpec({"spin"});
  spec.limits.cpu_seconds = 1;
  Launch l = LaunchFor(spec);
  l.timeout_seconds = 20;
  const LaunchResult r = RunWorker(l);
  ASSERT_FALSE(r.timed_out) << r.Describe();
  EXPECT_TRUE(r.Signal() == SIGXCPU || r.Signal() == SIGKILL) << r.Describe();
}

}  // namespace
}  // namespace skillmcp::testing
