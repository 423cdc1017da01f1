// The run's Landlock ruleset: the pure plan per ABI (worker/landlock_rules.h), then the
// real thing (worker/landlock.h) applied in a forked child on this kernel, which then
// tries what a script would. A kernel without Landlock skips the second part.
#include "worker/landlock.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/securebits.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "config.h"
#include "shared/landlock_abi.h"
#include "tests/unit/worker/test_util.h"
#include "worker/landlock_rules.h"
#include "worker/operator_dirs.h"

namespace skillmcp::worker {
namespace {

using namespace skillmcp::landlock;
using skillmcp::testing::CheckedModuleDir;

const LandlockPathRule* Find(const LandlockPlan& plan, const std::string& path) {
  for (const LandlockPathRule& r : plan.rules)
    if (r.path == path && !r.from_skill_fd) return &r;
  return nullptr;
}

RunSpec Spec(uint32_t abi) {
  RunSpec s;
  s.script_path = "/srv/skills/demo/main.js";
  s.landlock_abi = abi;
  s.scratch_dir_path = "/tmp/skill-mcp-run.abc";
  s.node_dir_path = "/opt/node";
  s.read_dirs = {{"/srv/node_modules", 2049, 131073}};
  return s;
}

TEST(LandlockPlan, OffIsEmpty) {
  LandlockPlan plan = BuildLandlockPlan(Spec(0));
  EXPECT_EQ(plan.abi, 0u);
  EXPECT_TRUE(plan.rules.empty());
}

TEST(LandlockPlan, EachAbiHandlesOnlyTheRightsItKnows) {
  EXPECT_EQ(HandledFsAccess(1), (1ULL << 13) - 1);
  EXPECT_EQ(HandledFsAccess(2), (1ULL << 14) - 1);
  EXPECT_EQ(HandledFsAccess(3), (1ULL << 15) - 1);
  EXPECT_EQ(HandledFsAccess(4), (1ULL << 15) - 1);  // ABI 4 added network rights only
  EXPECT_EQ(HandledFsAccess(5), (1ULL << 16) - 1);
  EXPECT_EQ(HandledFsAccess(7), (1ULL << 16) - 1);
  for (uint32_t abi = 1; abi <= kKnownAbi; ++abi) {
    RunSpec s = Spec(abi);
    s.network_off = abi >= 4;
    LandlockPlan plan = BuildLandlockPlan(s);
    EXPECT_EQ(plan.handled_net, abi >= 4 ? (kNetBindTcp | kNetConnectTcp) : 0u) << abi;
    EXPECT_EQ(plan.scoped, abi >= 6 ? (kScopeSignal | kScopeAbstractUnixSocket) : 0u) << abi;
    EXPECT_EQ(plan.attr_size, abi >= 6 ? 24u : abi >= 4 ? 16u : 8u) << abi;
    for (const LandlockPathRule& r : plan.rules)
      EXPECT_EQ(r.access & ~plan.handled_fs, 0u) << abi << " " << r.path;
  }
  // A kernel newer than this code is used at the newest ABI it knows.
  EXPECT_EQ(BuildLandlockPlan(Spec(kKnownAbi + 5)).abi, kKnownAbi);
}

TEST(LandlockPlan, NetworkIsHandledOnlyWhenTheOperatorSaidOff) {
  EXPECT_EQ(BuildLandlockPlan(Spec(7)).handled_net, 0u);
}

TEST(LandlockPlan, TheAllowlist) {
  LandlockPlan plan = BuildLandlockPlan(Spec(7));
  const uint64_t read = kReadFile | kReadDir;
  for (const char* sys : {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/opt/node"}) {
    const LandlockPathRule* r = Find(plan, sys);
    ASSERT_NE(r, nullptr) << sys;
    EXPECT_EQ(r->access, read | kExecute) << sys;
  }
  for (const char* ro : {"/proc", "/sys/devices/system/cpu", "/srv/node_modules"}) {
    const LandlockPathRule* r = Find(plan, ro);
    ASSERT_NE(r, nullptr) << ro;
    EXPECT_EQ(r->access, read) << ro;
  }
  const LandlockPathRule* modules = Find(plan, "/srv/node_modules");
  ASSERT_NE(modules, nullptr);
  EXPECT_TRUE(modules->module_dir);
  EXPECT_EQ(modules->module_dev, 2049u) << "the identity the broker checked goes along";
  EXPECT_EQ(modules->module_ino, 131073u);
  for (const char* dev : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"}) {
    const LandlockPathRule* r = Find(plan, dev);
    ASSERT_NE(r, nullptr) << dev;
    EXPECT_EQ(r->access, kReadFile | kWriteFile | kTruncate) << dev;
  }
  const LandlockPathRule* scratch = Find(plan, "/tmp/skill-mcp-run.abc");
  ASSERT_NE(scratch, nullptr);
  EXPECT_TRUE(scratch->required);
  EXPECT_EQ(scratch->access & (kWriteFile | kMakeReg | kMakeDir | kRemoveFile | kExecute),
            kWriteFile | kMakeReg | kMakeDir | kRemoveFile | kExecute);
  EXPECT_EQ(scratch->access & (kMakeChar | kMakeBlock | kIoctlDev), 0u);
  int skill_rules = 0;
  for (const LandlockPathRule& r : plan.rules) {
    if (!r.from_skill_fd) continue;
    ++skill_rules;
    EXPECT_EQ(r.access, read) << "the skill is read-only";
    EXPECT_TRUE(r.required);
  }
  EXPECT_EQ(skill_rules, 1);
  // Nothing else: no /tmp, /var/tmp, /dev/shm, /home, /root, /run, /dev as a whole.
  for (const char* never : {"/tmp", "/var/tmp", "/dev/shm", "/home", "/root", "/run", "/dev",
                            "/var", "/", "/sys"})
    EXPECT_EQ(Find(plan, never), nullptr) << never;
  EXPECT_EQ(plan.rules.size(), 8u + 1 + 2 + 4 + 1 + 1 + 1);
}

// This build's sysconfdir (config.h, from meson's prefix and sysconfdir): /etc for a
// package (prefix /usr), /usr/local/etc for the default prefix CI builds with.
std::string ConfiguredDir() { return std::string(SKILL_MCP_SYSCONFDIR) + "/skill-mcp"; }

TEST(LandlockPlan, TheConfiguredSysconfdirIsAnOperatorsDirectory) {
  const std::vector<std::string>& dirs = OperatorDirs();
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), ConfiguredDir()), dirs.end()) << ConfiguredDir();
}

// The paths the operator or the broker names are checked against the operator's
// directories; the fixed system paths are only granted around them.
TEST(LandlockPlan, NamedPathsAreMarked) {
  RunSpec s = Spec(7);
  s.data_dir_path = "/srv/data";
  const LandlockPlan plan = BuildLandlockPlan(s);
  for (const char* named : {"/srv/data", "/tmp/skill-mcp-run.abc", "/opt/node"}) {
    const LandlockPathRule* r = Find(plan, named);
    ASSERT_NE(r, nullptr) << named;
    EXPECT_TRUE(r->named) << named;
  }
  for (const char* system : {"/etc", "/usr", "/proc", "/dev/null"}) {
    const LandlockPathRule* r = Find(plan, system);
    ASSERT_NE(r, nullptr) << system;
    EXPECT_FALSE(r->named) << system;
  }
}

// Node at /usr/bin/node: its prefix rule would repeat the system's /usr (and its walk
// around the operator's directories). A rule with more rights beneath one is kept.
TEST(LandlockPlan, ARuleAnotherAlreadyGrantsIsLeftOut) {
  RunSpec s = Spec(7);
  s.node_dir_path = "/usr";
  s.data_dir_path = "/usr/local/share/data";
  LandlockPlan plan = BuildLandlockPlan(s);
  EXPECT_EQ(std::count_if(plan.rules.begin(), plan.rules.end(),
                          [](const LandlockPathRule& r) { return r.path == "/usr"; }),
            1);
  EXPECT_NE(Find(plan, "/usr/local/share/data"), nullptr) << "read-write is more than /usr's";
  s.node_dir_path = "/usr/local";  // node in /usr/local/bin: beneath /usr, as much
  plan = BuildLandlockPlan(s);
  EXPECT_EQ(Find(plan, "/usr/local"), nullptr);
  s.node_dir_path = "/opt/node";
  plan = BuildLandlockPlan(s);
  EXPECT_NE(Find(plan, "/opt/node"), nullptr) << "nothing grants /opt";
  s.data_dir_path = "/etc";  // above nothing else; read-write is more than /etc's
  plan = BuildLandlockPlan(s);
  EXPECT_EQ(std::count_if(plan.rules.begin(), plan.rules.end(),
                          [](const LandlockPathRule& r) { return r.path == "/etc"; }),
            2);
}

TEST(LandlockPlan, DataDirAndNoRuleForANamespacedRunsTmp) {
  RunSpec s = Spec(3);
  s.data_dir_path = "/srv/data";
  s.namespaces = true;
  LandlockPlan plan = BuildLandlockPlan(s);
  const LandlockPathRule* data = Find(plan, "/srv/data");
  ASSERT_NE(data, nullptr);
  EXPECT_NE(data->access & kWriteFile, 0u);
  EXPECT_EQ(data->access & kExecute, 0u);
  EXPECT_EQ(data->access & kIoctlDev, 0u);
  EXPECT_EQ(data->access & (1ULL << 15), 0u) << "ABI 3 knows no IOCTL_DEV";
  // A rule covers whatever is mounted beneath it: the view binds the skill under /tmp.
  EXPECT_EQ(Find(plan, "/tmp"), nullptr) << "no rule for the private /tmp of a namespaced run";
}

// What a worker started ahead adds while it waits is exactly the whole plan's `ahead`
// part, whatever the run adds (a data directory or scratch directory under /usr, node in
// /usr, module directories), with the same masks; /proc, the skill, the modules, the
// scratch and data directories are never ahead (a namespaced run's /proc is its own).
TEST(LandlockPlan, TheRulesAheadAreThoseOfTheWholePlanNoRunChanges) {
  for (uint32_t abi : {1u, 3u, 4u, 6u, 7u}) {
    for (const char* node : {"/opt/node", "/usr", "/usr/local/bin", ""}) {
      for (const char* data : {"", "/srv/data", "/usr/local/share/data", "/etc"}) {
        for (const char* scratch : {"/tmp/skill-mcp-run.abc", "/usr/tmp/skill-mcp-run.abc"}) {
          RunSpec s = Spec(abi);
          s.network_off = abi >= 4;
          s.node_dir_path = node;
          s.data_dir_path = data;
          s.scratch_dir_path = scratch;
          const LandlockPlan whole = BuildLandlockPlan(s);
          const LandlockPlan ahead = BuildLandlockAheadPlan(abi, s.network_off, node);
          const std::string what = std::to_string(abi) + " " + node + " " + data + " " + scratch;
          EXPECT_EQ(ahead.abi, whole.abi) << what;
          EXPECT_EQ(ahead.handled_fs, whole.handled_fs) << what;
          EXPECT_EQ(ahead.handled_net, whole.handled_net) << what;
          EXPECT_EQ(ahead.scoped, whole.scoped) << what;
          EXPECT_EQ(ahead.attr_size, whole.attr_size) << what;
          std::vector<std::string> want, got;
          for (const LandlockPathRule& r : whole.rules) {
            if (!r.ahead) continue;
            // The scratch and data directories are the only rules that may create files.
            EXPECT_FALSE(r.from_skill_fd || r.module_dir || r.path == "/proc" ||
                         (r.access & kMakeReg) != 0)
                << r.path << " is the run's";
            want.push_back(r.path + " " + std::to_string(r.access) + " " +
                           std::to_string(r.required) + std::to_string(r.named));
          }
          for (const LandlockPathRule& r : ahead.rules)
            got.push_back(r.path + " " + std::to_string(r.access) + " " +
                          std::to_string(r.required) + std::to_string(r.named));
          EXPECT_EQ(got, want) << what;
          EXPECT_NE(Find(whole, "/proc"), nullptr) << what;
          EXPECT_FALSE(Find(whole, "/proc")->ahead) << what;
          EXPECT_NE(Find(ahead, "/usr"), nullptr) << what;
        }
      }
    }
  }
}

TEST(LandlockPlan, FileRulesKeepOnlyFileRights) {
  EXPECT_EQ(FileOnlyAccess(HandledFsAccess(7)),
            kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev);
}

// ---- on this kernel ----------------------------------------------------------------

int KernelAbi() { return ProbeAbi(); }

struct Tree {
  std::string root, skill, scratch, other;
  Tree() {
    char tmpl[] = "/tmp/landlock-test.XXXXXX";
    root = mkdtemp(tmpl);
    skill = root + "/skill";
    scratch = root + "/scratch";
    other = root + "/other";
    mkdir(skill.c_str(), 0755);
    mkdir(scratch.c_str(), 0700);
    mkdir(other.c_str(), 0755);
    Write(skill + "/main.js", "x");
    Write(other + "/secret", "s");
  }
  ~Tree() { (void)!std::system(("rm -rf '" + root + "'").c_str()); }
  static void Write(const std::string& p, const char* text) {
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)!write(fd, text, strlen(text));
      close(fd);
    }
  }
};

// A run on this host's Tree: its scratch directory, node under /usr, no module directory.
RunSpec HostSpec(int abi, const Tree& t) {
  RunSpec spec = Spec(static_cast<uint32_t>(abi));
  spec.scratch_dir_path = t.scratch;
  spec.node_dir_path = "/usr";
  spec.read_dirs = {};
  return spec;
}

// Runs `body` in a child restricted to `spec`'s ruleset; the child's exit code is what
// `body` returns (0..125), 126 when the ruleset failed. `ahead`: the rules no run changes
// go into a ruleset made first, as a worker started ahead makes it while it waits.
// `meanwhile` runs between the two halves (what changes while a worker waits).
CellSpec CellFor(const RunSpec& spec) {
  CellSpec cell;
  cell.landlock_ahead = true;
  cell.landlock_abi = spec.landlock_abi;
  cell.network_off = spec.network_off;
  cell.node_dir_path = spec.node_dir_path;
  return cell;
}

int InOneChild(const RunSpec& spec, const std::string& skill, const std::function<int()>& body,
               bool ahead, const std::function<void()>& meanwhile = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    LandlockAhead made;
    if (ahead && PrepareLandlockAhead(CellFor(spec), made)) _exit(126);
    if (meanwhile) meanwhile();
    int dir = open(skill.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(126);
    if (ApplyLandlock(spec, dir, made)) _exit(126);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

// Both ways, which must agree: the whole ruleset made at the run, and the part no run
// changes made ahead (CellSpec::landlock_ahead); 200 when they differ.
int InChild(const RunSpec& spec, const std::string& skill, const std::function<int()>& body) {
  const int whole = InOneChild(spec, skill, body, false);
  const int ahead = InOneChild(spec, skill, body, true);
  return whole == ahead ? whole : 200;
}

int OpenErr(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

TEST(LandlockKernel, TheRunReachesOnlyItsAllowlist) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  RunSpec spec = HostSpec(abi, t);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.skill + "/main.js", O_RDONLY); }), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.skill + "/main.js", O_WRONLY); }),
            EACCES) << "the skill is read-only";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.skill + "/new", O_WRONLY | O_CREAT); }),
            EACCES);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.other + "/secret", O_RDONLY); }),
            EACCES) << "a neighbouring file";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.scratch + "/f", O_RDWR | O_CREAT); }),
            0) << "the scratch directory is writable";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/etc/hostname", O_RDONLY); }), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/dev/null", O_WRONLY | O_TRUNC); }), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/proc/self/status", O_RDONLY); }), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/usr/bin/env", O_RDONLY); }), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/var/tmp", O_RDONLY | O_DIRECTORY); }),
            EACCES);
  // The ruleset survives exec and binds every descendant: a shell cannot read it either.
  EXPECT_EQ(InChild(spec, t.skill, [&] {
              execl("/bin/sh", "sh", "-c", ("exec cat " + t.other + "/secret >/dev/null").c_str(),
                    static_cast<char*>(nullptr));
              return 125;
            }),
            1);
}

// What a test plants on the host (files, and the directories it had to make) is removed
// by a guard process once the test lets go of it, also when the test dies mid-way (the
// guard sees its end of the pipe close): nothing is left in /etc, /run or /usr.
class HostLeftovers {
 public:
  HostLeftovers() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    guard_ = fork();
    if (guard_ == 0) {
      close(fds[1]);
      Guard(fds[0]);
    }
    close(fds[0]);
    write_end_ = fds[1];
  }
  ~HostLeftovers() {
    if (write_end_ >= 0) close(write_end_);
    if (guard_ > 0) waitpid(guard_, nullptr, 0);
  }
  void File(const std::string& path) { Tell('f', path); }
  void Dir(const std::string& path) { Tell('d', path); }  // one the test made

 private:
  void Tell(char kind, const std::string& path) {
    const std::string line = kind + path + '\n';
    if (write_end_ >= 0) (void)!write(write_end_, line.data(), line.size());
  }
  // Reads until the test's end closes, then removes the files, then the directories,
  // the last made first.
  [[noreturn]] static void Guard(int fd) {
    std::string all;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) != 0;)
      if (n > 0) all.append(buf, static_cast<size_t>(n));
      else if (errno != EINTR) break;
    std::vector<std::string> dirs;
    for (size_t at = 0, nl; (nl = all.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string path = all.substr(at + 1, nl - at - 1);
      if (all[at] == 'f') unlink(path.c_str());
      else dirs.push_back(path);
    }
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) rmdir(it->c_str());
    _exit(0);
  }
  pid_t guard_ = -1;
  int write_end_ = -1;
};

// What is missing of `dir` made (0755) and told to `left`; "" or what failed.
std::string MakeHostPath(const std::string& dir, HostLeftovers& left) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string prefix = dir.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) == 0) left.Dir(prefix);
    else if (errno != EEXIST) return "cannot make " + prefix + ": " + strerror(errno);
  }
  return "";
}

// A world-readable file at `path`, told to `left` first.
void PlantHostFile(const std::string& path, const char* text, HostLeftovers& left) {
  left.File(path);
  Tree::Write(path, text);
  chmod(path.c_str(), 0644);
}

// The guard removes what it was told when the test process dies without cleaning up.
TEST(HostLeftovers, RemovedWhenTheTestDies) {
  Tree t;
  const std::string dir = t.root + "/made/deeper", file = dir + "/planted";
  const pid_t test = fork();
  if (test == 0) {
    HostLeftovers left;
    if (!MakeHostPath(dir, left).empty()) _exit(1);
    PlantHostFile(file, "x", left);
    kill(getpid(), SIGKILL);  // no destructor runs
  }
  int status = 0;
  waitpid(test, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  for (int i = 0; i < 200 && access((t.root + "/made").c_str(), F_OK) == 0; ++i) usleep(10000);
  EXPECT_NE(access(file.c_str(), F_OK), 0);
  EXPECT_NE(access((t.root + "/made").c_str(), F_OK), 0) << "the made directories are gone";
}

// /etc/skill-mcp holds the operator's environment file, the credstore directories of
// /etc, /run and /usr/lib systemd's credentials (worker/operator_dirs.cc): a run reads the
// rest of /etc and /usr, lists /etc, and cannot open any file beneath them whatever its
// mode, also by another path to the same directory (/lib/credstore where /lib is a
// symlink to usr/lib). (Their names stay listable: the kReadDir kept on the directories
// above reaches every directory beneath them.)
TEST(LandlockKernel, TheOperatorsDirectoriesAreOutOfReach) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  if (geteuid() != 0) GTEST_SKIP() << "planting files in the operator's directories needs root";
  Tree t;
  RunSpec spec = HostSpec(abi, t);
  char lib_target[16] = {};
  const bool merged_usr = readlink("/lib", lib_target, sizeof(lib_target) - 1) > 0 &&
                          (std::string(lib_target) == "usr/lib" || std::string(lib_target) == "/usr/lib");
  // Spelled out, not taken from OperatorDirs(): the list is what this test checks.
  // systemd.exec(5): LoadCredential= reads /etc, /run and /usr/lib's credstore,
  // LoadCredentialEncrypted= their credstore.encrypted.
  for (const std::string dir : {"/etc/skill-mcp", "/etc/credstore", "/etc/credstore.encrypted",
                                "/run/credstore", "/run/credstore.encrypted",
                                "/usr/lib/credstore", "/usr/lib/credstore.encrypted"}) {
    HostLeftovers left;
    if (std::string e = MakeHostPath(dir, left); !e.empty()) {
      ADD_FAILURE() << e;
      continue;
    }
    const std::string name = "/landlock-test." + std::to_string(getpid());
    const std::string planted = dir + name;
    PlantHostFile(planted, "SECRET=1\n", left);
    const int planted_err = InChild(spec, t.skill, [&] { return OpenErr(planted, O_RDONLY); });
    int alias_err = EACCES;
    if (merged_usr && dir.rfind("/usr/lib/", 0) == 0) {
      const std::string alias = dir.substr(4) + name;  // /lib/credstore/...
      alias_err = InChild(spec, t.skill, [&] { return OpenErr(alias, O_RDONLY); });
    }
    const int control_err = OpenErr(planted, O_RDONLY);  // without the ruleset
    EXPECT_EQ(planted_err, EACCES) << "a world-readable file in " << dir;
    EXPECT_EQ(alias_err, EACCES) << "the same file through /lib, " << dir;
    EXPECT_EQ(control_err, 0) << "control: " << dir << " without Landlock";
  }
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/etc/hostname", O_RDONLY); }), 0)
      << "the rest of /etc";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/etc", O_RDONLY | O_DIRECTORY); }), 0)
      << "/etc can still be listed";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr("/usr/bin/env", O_RDONLY); }), 0)
      << "the rest of /usr";
}

// <sysconfdir>/skill-mcp made where missing (removed again, with what was made of the
// path, by HostLeftovers), a world-readable file planted in it and one beside it.
struct PlantedConfig {
  HostLeftovers left;
  std::string dir = ConfiguredDir(), parent, planted, sibling, error;
  PlantedConfig() {
    parent = dir.substr(0, dir.rfind('/'));
    error = MakeHostPath(dir, left);
    planted = dir + "/landlock-test." + std::to_string(getpid());
    sibling = parent + "/landlock-test." + std::to_string(getpid());
    if (!error.empty()) return;
    PlantHostFile(planted, "SECRET=1\n", left);
    PlantHostFile(sibling, "not secret\n", left);
  }
};

// A build whose sysconfdir lies beneath a granted system directory (/usr/local/etc with
// the default prefix): a run cannot open a file in <sysconfdir>/skill-mcp, even with
// node's prefix rule on /usr, while the rest of /usr, and of the directories on the way
// down, stays readable.
// Rules made ahead are decided by the operator's directories and the directories walked
// around them as they were while the worker waited. A change since makes them stale: the
// run makes the whole ruleset instead, and gets what the whole ruleset gives. Root only
// (it plants in /usr/lib and /etc; the guard removes what it planted).
TEST(LandlockKernel, RulesMadeAheadAreRemadeWhenWhatDecidedThemChanged) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  if (geteuid() != 0) GTEST_SKIP() << "planting in /usr/lib and /etc needs root";
  Tree t;
  RunSpec spec = HostSpec(abi, t);
  const std::string tag = std::to_string(getpid());
  // 1. An operator's directory made meanwhile where nothing was walked: /usr was granted
  //    whole (no operator's directory under it then); the run must not reach the new one.
  if (access("/usr/lib/credstore", F_OK) == 0 ||
      access(SKILL_MCP_SYSCONFDIR "/skill-mcp", F_OK) == 0) {
    std::cout << "NOTE: an operator's directory under /usr exists: the first case is not tried\n";
  } else {
    HostLeftovers left;
    const std::string planted = "/usr/lib/credstore/landlock-ahead." + tag;
    const auto make = [&] {
      if (MakeHostPath("/usr/lib/credstore", left).empty())
        PlantHostFile(planted, "SECRET=1\n", left);
    };
    const auto read = [&] { return OpenErr(planted, O_RDONLY); };
    EXPECT_EQ(InOneChild(spec, t.skill, read, true, make), EACCES)
        << "the rules made ahead were used";
    EXPECT_EQ(InOneChild(spec, t.skill, read, false), EACCES) << "the whole ruleset";
  }
  // 2. An entry made meanwhile in a walked directory: /etc is granted entry by entry
  //    around /etc/credstore; a file made since is granted as the whole ruleset grants it.
  HostLeftovers left;
  ASSERT_EQ(MakeHostPath("/etc/credstore", left), "");
  const std::string made_since = "/etc/landlock-ahead." + tag;
  const auto plant = [&] { PlantHostFile(made_since, "x", left); };
  const auto read = [&] { return OpenErr(made_since, O_RDONLY); };
  EXPECT_EQ(InOneChild(spec, t.skill, read, true, plant), 0) << "the stale walk was used";
  EXPECT_EQ(InOneChild(spec, t.skill, read, false), 0) << "the whole ruleset";
}

// The rules made ahead are looked up as the run's user alone: a root broker's worker
// keeps its effective capabilities across its uid switch until kDropCaps (the securebits'
// NO_SETUID_FIXUP), and the run's own step looks up with none. A node directory that
// user cannot reach fails the step ahead too, and the worker has its capabilities back
// afterwards. Root only (the uid switch keeping capabilities).
TEST(LandlockKernel, RulesMadeAheadAreLookedUpWithoutTheWorkersCapabilities) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  if (geteuid() != 0) GTEST_SKIP() << "switching uid while keeping capabilities needs root";
  Tree t;
  const std::string closed = t.root + "/closed";
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((closed + "/node").c_str(), 0755), 0);
  // 0: as expected; 2: the switch failed; 3: no capability kept (nothing to test).
  const auto as_nobody_with_caps = [&](const std::string& node_dir, bool expect_refused) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) != 0 ||
          setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
          setresuid(65534, 65534, 65534) != 0)
        _exit(2);
      const auto has = [](cap_value_t cap) {
        cap_t now = cap_get_proc();
        cap_flag_value_t v = CAP_CLEAR;
        if (now != nullptr) cap_get_flag(now, cap, CAP_EFFECTIVE, &v);
        cap_free(now);
        return v == CAP_SET;
      };
      if (!has(CAP_DAC_READ_SEARCH)) _exit(3);
      RunSpec spec = Spec(static_cast<uint32_t>(abi));
      spec.node_dir_path = node_dir;
      LandlockAhead made;
      const bool refused = static_cast<bool>(PrepareLandlockAhead(CellFor(spec), made));
      if (refused != expect_refused) _exit(4);
      _exit(has(CAP_DAC_READ_SEARCH) ? 0 : 5);  // given back either way
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
  };
  const int refused = as_nobody_with_caps(closed + "/node", true);
  if (refused == 3) GTEST_SKIP() << "the uid switch kept no capability here";
  EXPECT_EQ(refused, 0)
      << "4: a directory out of the user's reach was looked up with the worker's capabilities";
  EXPECT_EQ(as_nobody_with_caps("/usr", false), 0) << "5: the capabilities were not given back";
}

TEST(LandlockKernel, TheConfiguredSysconfdirIsOutOfReach) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  const std::string dir = ConfiguredDir();
  if (dir == "/etc/skill-mcp")
    GTEST_SKIP() << "this build's sysconfdir is /etc: TheOperatorsDirectoriesAreOutOfReach "
                    "covers it";
  if (geteuid() != 0) GTEST_SKIP() << "planting a file in " << dir << " needs root";
  Tree t;
  PlantedConfig p;
  if (!p.error.empty()) GTEST_SKIP() << p.error;
  RunSpec spec = HostSpec(abi, t);
  const int planted_err = InChild(spec, t.skill, [&] { return OpenErr(p.planted, O_RDONLY); });
  const int sibling_err = InChild(spec, t.skill, [&] { return OpenErr(p.sibling, O_RDONLY); });
  const int usr_err = InChild(spec, t.skill, [&] { return OpenErr("/usr/bin/env", O_RDONLY); });
  const int control_err = OpenErr(p.planted, O_RDONLY);
  EXPECT_EQ(planted_err, EACCES) << "a world-readable file in " << dir;
  // Only where a granted directory holds the path: elsewhere no rule reaches it anyway.
  if (dir.rfind("/usr/", 0) == 0) {
    EXPECT_EQ(sibling_err, 0) << "a file beside " << dir;
  }
  EXPECT_EQ(usr_err, 0) << "the rest of /usr";
  EXPECT_EQ(control_err, 0) << "control: without Landlock";
}

// MCP_DATA_DIR on the directory holding <sysconfdir>/skill-mcp: the rule is decided by
// the directories' identities, so it is granted around skill-mcp as /usr's is. Reached
// through a symlink (swapped in since the broker resolved it) it grants nothing at all.
TEST(LandlockKernel, ADataDirAboveAnOperatorsDirectoryIsGrantedAroundIt) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  if (geteuid() != 0) GTEST_SKIP() << "planting a file in " << ConfiguredDir() << " needs root";
  Tree t;
  PlantedConfig p;
  if (!p.error.empty()) GTEST_SKIP() << p.error;
  const std::string link = t.root + "/data-link";
  ASSERT_EQ(symlink(p.parent.c_str(), link.c_str()), 0);
  RunSpec spec = HostSpec(abi, t);
  for (const std::string& data : {link, p.parent}) {
    spec.data_dir_path = data;
    EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(p.planted, O_RDONLY); }), EACCES)
        << "MCP_DATA_DIR " << data;
    EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(link + "/skill-mcp/" +
                                                          p.planted.substr(p.dir.size() + 1),
                                                          O_RDONLY); }),
              EACCES) << "through the link, MCP_DATA_DIR " << data;
    EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(p.sibling, O_WRONLY); }),
              data == link ? EACCES : 0)
        << "a file beside it is writable (through a link: no rule), MCP_DATA_DIR " << data;
  }
  EXPECT_EQ(OpenErr(p.planted, O_RDONLY), 0) << "control: without Landlock";
}

// MCP_DATA_DIR that is <sysconfdir>/skill-mcp or lies in it: the run fails at its
// Landlock step rather than reach what no run may (fail closed).
TEST(LandlockKernel, ADataDirInAnOperatorsDirectoryFailsTheStep) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  if (geteuid() != 0) GTEST_SKIP() << "making " << ConfiguredDir() << " needs root";
  Tree t;
  PlantedConfig p;
  if (!p.error.empty()) GTEST_SKIP() << p.error;
  const std::string sub = p.dir + "/landlock-test-sub." + std::to_string(getpid());
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  p.left.Dir(sub);
  const std::string link = t.root + "/op-link";
  ASSERT_EQ(symlink(p.dir.c_str(), link.c_str()), 0);
  RunSpec spec = HostSpec(abi, t);
  std::vector<int> got;
  for (const std::string& data : {p.dir, sub, link}) {
    spec.data_dir_path = data;
    got.push_back(InChild(spec, t.skill, [&] { return OpenErr(p.planted, O_RDONLY); }));
  }
  spec.data_dir_path = t.other;
  const int control = InChild(spec, t.skill, [&] { return OpenErr(t.other + "/secret", O_RDONLY); });
  EXPECT_EQ(got, (std::vector<int>{126, 126, EACCES}))
      << "the directory, one in it, a link to it (no rule: the run goes on, reaching nothing)";
  EXPECT_EQ(control, 0) << "control: another data directory";
}

// A named path (MCP_DATA_DIR, the scratch directory) met as a symlink, on its last
// component or an earlier one, was swapped in since the broker resolved it: the optional
// data directory gets no rule (the run goes on, its target unwritable), a required path
// fails the step. Control: the real directory is granted.
TEST(LandlockKernel, ANamedPathThroughASymlinkIsNotFollowed) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  const std::string link = t.root + "/data-link", via = t.root + "/via";
  ASSERT_EQ(symlink(t.other.c_str(), link.c_str()), 0);
  ASSERT_EQ(symlink(t.root.c_str(), via.c_str()), 0);
  const std::string other_name = t.other.substr(t.root.size());
  RunSpec spec = HostSpec(abi, t);
  const std::string target = t.other + "/written";
  for (const std::string& data : {link, via + other_name}) {
    spec.data_dir_path = data;
    EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(target, O_WRONLY | O_CREAT); }),
              EACCES) << "MCP_DATA_DIR " << data;
  }
  spec.data_dir_path = t.other;  // control: the real directory
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(target, O_WRONLY | O_CREAT); }), 0);
  spec.data_dir_path = "";
  const std::string scratch_link = t.root + "/scratch-link";
  ASSERT_EQ(symlink(t.scratch.c_str(), scratch_link.c_str()), 0);
  spec.scratch_dir_path = scratch_link;
  EXPECT_EQ(InChild(spec, t.skill, [] { return 0; }), 126) << "a linked scratch directory";
  spec.scratch_dir_path = via + t.scratch.substr(t.root.size());
  EXPECT_EQ(InChild(spec, t.skill, [] { return 0; }), 126) << "a scratch through a linked parent";
}

TEST(LandlockKernel, ARequiredPathMissingFailsTheStep) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  RunSpec spec = Spec(static_cast<uint32_t>(abi));
  spec.scratch_dir_path = t.root + "/no-such-scratch";
  spec.node_dir_path = "/usr";
  EXPECT_EQ(InChild(spec, t.skill, [] { return 0; }), 126);
  spec.scratch_dir_path = t.scratch;
  spec.read_dirs = {CheckedModuleDir(t.root + "/no-such-node_modules")};  // optional: skipped
  EXPECT_EQ(InChild(spec, t.skill, [] { return 0; }), 0);
}

// A node_modules planted as a symlink (a skill that is its own root ships
// <root>/node_modules -> /, a repository commits one) grants nothing: the rule is opened
// without following it. Control: a real directory in its place is readable.
TEST(LandlockKernel, ASymlinkedModuleDirGrantsNothing) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  const std::string modules = t.root + "/node_modules";
  ASSERT_EQ(symlink(t.other.c_str(), modules.c_str()), 0);
  RunSpec spec = HostSpec(abi, t);
  spec.read_dirs = {CheckedModuleDir(modules)};
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }),
            EACCES) << "the link's target is not granted";
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(t.other + "/secret", O_RDONLY); }),
            EACCES);
  // A link on an earlier component is not followed either.
  const std::string linked_parent = t.root + "/via";
  ASSERT_EQ(symlink(t.root.c_str(), linked_parent.c_str()), 0);
  ASSERT_EQ(unlink(modules.c_str()), 0);
  ASSERT_EQ(rename(t.other.c_str(), modules.c_str()), 0);
  spec.read_dirs = {CheckedModuleDir(linked_parent + "/node_modules")};
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }),
            EACCES) << "reached through a linked parent";
  spec.read_dirs = {CheckedModuleDir(modules)};  // control: the real directory
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }), 0);
}

// A node_modules directory its group or others may write grants nothing (anyone could
// have put code there); the same directory without those bits is readable.
TEST(LandlockKernel, AModuleDirOthersMayWriteGrantsNothing) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  const std::string modules = t.root + "/node_modules";
  ASSERT_EQ(rename(t.other.c_str(), modules.c_str()), 0);
  RunSpec spec = HostSpec(abi, t);
  spec.read_dirs = {CheckedModuleDir(modules)};
  ASSERT_EQ(chmod(modules.c_str(), 0777), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }),
            EACCES) << "mode 0777";
  ASSERT_EQ(chmod(modules.c_str(), 0755), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }), 0);
}

// The broker checked the directory at <root>/node_modules; one renamed into its place
// since (same path, another inode: here one holding a file) grants nothing. Control: the
// directory there now, checked now, is readable.
TEST(LandlockKernel, AModuleDirSwappedSinceTheBrokersCheckGrantsNothing) {
  const int abi = KernelAbi();
  if (abi <= 0) GTEST_SKIP() << "this kernel has no Landlock (" << strerror(-abi) << ")";
  Tree t;
  const std::string modules = t.root + "/node_modules";
  ASSERT_EQ(mkdir(modules.c_str(), 0755), 0);
  RunSpec spec = HostSpec(abi, t);
  spec.read_dirs = {CheckedModuleDir(modules)};
  ASSERT_EQ(rename(modules.c_str(), (t.root + "/checked").c_str()), 0);
  ASSERT_EQ(rename(t.other.c_str(), modules.c_str()), 0);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }), EACCES)
      << "the swapped-in directory is not granted";
  spec.read_dirs = {CheckedModuleDir(modules)};
  EXPECT_EQ(InChild(spec, t.skill, [&] { return OpenErr(modules + "/secret", O_RDONLY); }), 0);
}

TEST(LandlockKernel, SignalsStayWithinTheRun) {
  const int abi = KernelAbi();
  if (abi < 6) GTEST_SKIP() << "signal scoping needs Landlock ABI 6 (this kernel: " << abi << ")";
  Tree t;
  RunSpec spec = HostSpec(abi, t);
  const pid_t parent = getpid();
  EXPECT_EQ(InChild(spec, t.skill, [&] { return kill(parent, 0) == 0 ? 0 : errno; }), EPERM);
  EXPECT_EQ(InChild(spec, t.skill, [&] { return kill(getpid(), 0) == 0 ? 0 : errno; }), 0);
  spec.landlock_abi = 5;  // control: without scoping the same call succeeds
  EXPECT_EQ(InChild(spec, t.skill, [&] { return kill(parent, 0) == 0 ? 0 : errno; }), 0);
}

}  // namespace
}  // namespace skillmcp::worker
