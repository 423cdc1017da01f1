// How node gets the bootstrap (worker/exec.h): the sealed copy at fd 8 as node's main
// module where the run's /proc shows it, node -e otherwise; the same program either way.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "shared/run_limits_default.h"
#include "tests/unit/worker/launcher.h"
#include "tests/unit/worker/test_util.h"
#include "worker/exec.h"
#include "worker/node_bootstrap.h"

namespace skillmcp::testing {
namespace {

using worker::BootstrapVia;

// Prints what tells the two ways apart and what must not: node's real argv (from
// /proc/self/cmdline, up to the script), whether fd 8 is still the sealed copy, whether the
// bootstrap is in require.cache, require.main, process.argv, execArgv and the globals.
constexpr char kProbeScript[] =
    "const fs = require('fs');\n"
    "const cmd = fs.readFileSync('/proc/self/cmdline', 'latin1').split('\\0');\n"
    "let fd8 = false;\n"
    "try { fd8 = fs.readlinkSync('/proc/self/fd/8').startsWith('/memfd:skill-mcp'); } catch {}\n"
    "const g = ['require', 'module', 'exports', '__filename', '__dirname', 'fs']\n"
    "  .filter((k) => Object.getOwnPropertyDescriptor(globalThis, k) !== undefined);\n"
    "console.log([cmd[1], fd8, Object.keys(require.cache).join(','),\n"
    "  require.main === module, process.mainModule === module,\n"
    "  JSON.stringify(process.argv.slice(1)), process.execArgv.length,\n"
    "  typeof process._eval, g.join(',')].join('|'));\n";

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << "no node at " << kNode;
    script_ = dir_.Sub("probe.js");
    WriteFile(script_, kProbeScript);
  }

  // The line the probe prints when run the given way, without the worker: node exec'd
  // directly with the worker's argv, the script at fd 6 and, for kMainFd, the sealed copy.
  std::string RunDirect(BootstrapVia via) { return RunDirect(via, script_); }
  // `offset`: where fd 6's file offset stands at exec (the bootstrap reads from 0 anyway).
  std::string RunDirect(BootstrapVia via, const std::string& script, off_t offset = 0) {
    int p[2];
    if (pipe(p) != 0) return "pipe failed";
    const pid_t child = fork();
    if (child == 0) {
      // stdout first: the pipe may sit where 6 or 8 go.
      if (dup2(p[1], 1) != 1) _exit(120);
      const int fd = open(script.c_str(), O_RDONLY);
      if (fd < 0 || lseek(fd, offset, SEEK_SET) != offset || dup2(fd, 6) != 6 ||
          chdir(dir_.path().c_str()) != 0)
        _exit(120);
      close(worker::kWorkerBootstrapFd);
      if (via == BootstrapVia::kMainFd && !worker::SealBootstrap()) _exit(121);
      RunSpec spec;
      spec.script_path = script;
      spec.args = {"--eval=1", "-e"};
      std::vector<std::string> argv = worker::BuildArgv(spec, via);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      char path_env[] = "PATH=/usr/bin:/bin";
      char* envp[] = {path_env, nullptr};
      execve(kNode, cargv.data(), envp);
      _exit(122);
    }
    close(p[1]);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    close(p[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      out += "[exit status " + std::to_string(status) + "]";
    return out;
  }

  TempDir dir_;
  std::string script_;
};

TEST_F(BootstrapTest, BothWaysGiveTheScriptTheSameWorldAndLeaveNoTrace) {
  const std::string expected_tail =
      "|false|" + script_ + "|true|true|[\"" + script_ + "\",\"--eval=1\",\"-e\"]|0|undefined|\n";
  EXPECT_EQ(RunDirect(BootstrapVia::kEval), "-e" + expected_tail);
  EXPECT_EQ(RunDirect(BootstrapVia::kMainFd), "--preserve-symlinks-main" + expected_tail);
}

// ES module scripts, declared (.mjs) and detected (a typeless .js with import syntax),
// run the same both ways: the -e way has removed the global require before it needs
// the 'module' builtin for them.
TEST_F(BootstrapTest, BothWaysRunEsModuleScripts) {
  const std::string mjs = dir_.Sub("probe.mjs");
  WriteFile(mjs,
            "import fs from 'fs';\nconsole.log('esm', typeof fs.readFileSync, typeof require);\n");
  const std::string detected = dir_.Sub("detected.js");
  WriteFile(detected, "import path from 'path';\nconsole.log('esm', path.sep, typeof require);\n");
  for (BootstrapVia via : {BootstrapVia::kEval, BootstrapVia::kMainFd}) {
    EXPECT_EQ(RunDirect(via, mjs), "esm function undefined\n") << static_cast<int>(via);
    EXPECT_EQ(RunDirect(via, detected), "esm / undefined\n") << static_cast<int>(via);
  }
}

// The bootstrap reads fd 6 from offset 0: up to 16 KiB at once, a larger script into a
// buffer of its size. Scripts of every size around that bound run whole, both ways,
// whatever the descriptor's offset, as CommonJS and as ES modules. Each script counts its
// own lines; a cut one prints less, or fails to compile.
TEST_F(BootstrapTest, BothWaysRunTheWholeScriptWhateverItsSizeAndOffset) {
  const std::string head = "let n = 0;\n", tail = "console.log(n);\n", line = "n++;\n";
  for (size_t size :
       {size_t{100}, size_t{16383}, size_t{16384}, size_t{16385}, size_t{32768}, size_t{100000}}) {
    const size_t lines = (size - head.size() - tail.size() - 3) / line.size();
    std::string text = head;
    for (size_t i = 0; i < lines; ++i) text += line;
    text += "//" + std::string(size - text.size() - tail.size() - 3, 'x') + "\n" + tail;
    ASSERT_EQ(text.size(), size);
    for (const char* ext : {".js", ".mjs"}) {
      const std::string path = dir_.Sub("sized-" + std::to_string(size) + ext);
      WriteFile(path, text);
      for (BootstrapVia via : {BootstrapVia::kEval, BootstrapVia::kMainFd}) {
        for (off_t offset : {off_t{0}, static_cast<off_t>(size / 2), static_cast<off_t>(size)}) {
          EXPECT_EQ(RunDirect(via, path, offset), std::to_string(lines) + "\n")
              << size << " bytes" << ext << ", offset " << offset << ", way "
              << static_cast<int>(via);
        }
      }
    }
  }
}

TEST_F(BootstrapTest, TheWorkerTakesTheMainFdWayWhereProcShowsIt) {
  if (geteuid() != 0) GTEST_SKIP() << "the worker tests switch uids and need root";
  if (access("/package.json", F_OK) == 0) GTEST_SKIP() << "a /package.json makes the worker use -e";
  RunSpec s;
  s.script_path = script_;
  s.envp = {"PATH=/usr/bin:/bin"};
  s.switch_ids = true;
  s.uid = s.gid = 65534;
  s.limits = kDefaultRunLimits;
  SetSeccomp(s, true);
  Launch l;
  l.spec_bytes = EncodeRunSpec(s).value();
  l.program_path = kNode;
  l.script_path = script_;
  l.dir_path = dir_.path();
  l.timeout_seconds = 60;
  const LaunchResult r = RunWorker(l);
  EXPECT_EQ(r.ExitCode(), 0) << r.Describe();
  EXPECT_EQ(r.out, "--preserve-symlinks-main|false|" + script_ + "|true|true|[\"" + script_ +
                       "\"]|0|undefined|\n")
      << r.Describe();
}

// In a child: what SealBootstrap left at fd 8, or why not ("" when all is as it should).
std::string CheckSealedCopy() {
  if (!worker::SealBootstrap()) return "not sealed";
  if (fcntl(worker::kWorkerBootstrapFd, F_GETFD) != 0) return "close-on-exec set";
  const int seals = fcntl(worker::kWorkerBootstrapFd, F_GET_SEALS);
  // F_SEAL_EXEC (0x20, linux 6.3) comes with MFD_NOEXEC_SEAL where the kernel has it.
  if ((seals & ~0x20) != (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)) return "seals";
  // Reopened by its /proc path, as node does, for writing: refused by the seals.
  const int rw = open("/proc/self/fd/8", O_RDWR);
  if (rw >= 0 && write(rw, "x", 1) >= 0) return "writable through /proc";
  std::string text(sizeof worker::kNodeBootstrap + 16, '\0');
  const ssize_t n = pread(worker::kWorkerBootstrapFd, text.data(), text.size(), 0);
  if (n < 0 || text.substr(0, static_cast<size_t>(n)) != worker::kNodeBootstrap) return "bytes";
  return "";
}

TEST(SealBootstrap, HoldsExactlyTheBootstrapSealedAndInheritable) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t child = fork();
  if (child == 0) {
    const std::string why = CheckSealedCopy();
    (void)!write(p[1], why.data(), why.size());
    _exit(0);
  }
  close(p[1]);
  char buf[256];
  const ssize_t n = read(p[0], buf, sizeof buf);
  close(p[0]);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "");
}

// The view ChooseBootstrapVia is asked in (root only for the last two, in a private
// mount namespace of the child).
enum class View {
  kHost,
  kProcNotProcfs,    // /proc a tmpfs holding a /proc/self/fd/8 of someone else's making
  kRootPackageJson,  // a root with /package.json, the real /proc bound in
};

// The view made in the calling process (a forked child); false if it could not be made.
bool MakeView(View view, const std::string& scratch) {
  if (view == View::kHost) return true;
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return false;
  if (view == View::kProcNotProcfs) {
    if (mount("tmpfs", "/proc", "tmpfs", 0, nullptr) != 0 || mkdir("/proc/self", 0755) != 0 ||
        mkdir("/proc/self/fd", 0755) != 0)
      return false;
    WriteFile("/proc/self/fd/8", "process.exit(0)\n");
    return true;
  }
  // node would find this package.json above /proc/self/fd/8: "type": "module" there
  // would load the bootstrap as an ES module.
  const std::string proc = scratch + "/proc";
  if (mount("tmpfs", scratch.c_str(), "tmpfs", 0, nullptr) != 0 || mkdir(proc.c_str(), 0755) != 0 ||
      mount("/proc", proc.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return false;
  WriteFile(scratch + "/package.json", "{\"type\": \"module\"}\n");
  return chroot(scratch.c_str()) == 0 && chdir("/") == 0;
}

// In a child: ChooseBootstrapVia's answer as a letter ('m' main fd, 'e' eval), then
// whether fd 8 is still open ('o') or closed ('c').
std::string Choose(bool seal, View view) {
  TempDir scratch;
  int p[2];
  if (pipe(p) != 0) return "pipe";
  const pid_t child = fork();
  if (child == 0) {
    const bool sealed = seal && worker::SealBootstrap();
    if (!MakeView(view, scratch.path())) _exit(1);
    const BootstrapVia via = worker::ChooseBootstrapVia(sealed);
    const char out[2] = {via == BootstrapVia::kMainFd ? 'm' : 'e',
                         fcntl(worker::kWorkerBootstrapFd, F_GETFD) >= 0 ? 'o' : 'c'};
    (void)!write(p[1], out, 2);
    _exit(0);
  }
  close(p[1]);
  char buf[2];
  const ssize_t n = read(p[0], buf, 2);
  close(p[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (n != 2) return "child failed, status " + std::to_string(status);
  return std::string(buf, 2);
}

TEST(ChooseBootstrapVia, MainFdOnlyWhenProcLeadsToTheSealedCopy) {
  if (access("/package.json", F_OK) == 0) GTEST_SKIP() << "a /package.json makes the worker use -e";
  EXPECT_EQ(Choose(/*seal=*/true, View::kHost), "mo");
  EXPECT_EQ(Choose(/*seal=*/false, View::kHost), "ec");
  if (geteuid() != 0) GTEST_SKIP() << "covering /proc needs root";
  EXPECT_EQ(Choose(/*seal=*/true, View::kProcNotProcfs), "ec");
  EXPECT_EQ(Choose(/*seal=*/true, View::kRootPackageJson), "ec");
}

}  // namespace
}  // namespace skillmcp::testing
