#include "worker/exec.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "shared/unique_fd.h"
#include "worker/node_bootstrap.h"
#include "worker/python_bootstrap.h"

namespace {
// MFD_NOEXEC_SEAL (linux 6.3); Debian 12's headers predate it.
constexpr unsigned kMfdNoexecSeal = 0x0008U;
}  // namespace

namespace skillmcp::worker {
namespace {

std::vector<char*> CArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool SameFile(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

std::vector<std::string> BuildArgv(const RunSpec& spec, BootstrapVia via) {
  if (spec.interpreter == InterpreterKind::kPython3) {
    // why argv[0] the real path: python3 finds its prefix, and so its stdlib, from it, and
    // execveat by descriptor gives it no other path. The flags: worker/python_bootstrap.h.
    std::vector<std::string> argv = {
        spec.interpreter_path, "-I", "-B", "-X", "frozen_modules=on", "-c", kPythonBootstrap};
    argv.push_back(spec.script_path);
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    return argv;
  }
  // Either way the script path and every argument come after the end of node's options
  // ("--", or the main module's path), so they reach process.argv verbatim and
  // "--eval=..." as a file name or argument is never an option.
  std::vector<std::string> argv =
      via == BootstrapVia::kMainFd
          // why --preserve-symlinks-main: node would otherwise realpath the main module,
          // and the magic link names a memfd no path reaches (tests/bench/README.md, 5.).
          ? std::vector<std::string>{"node", "--preserve-symlinks-main", kBootstrapPath}
          : std::vector<std::string>{"node", "-e", kNodeBootstrap, "--"};
  argv.push_back(spec.script_path);
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  return argv;
}

bool SealBootstrap() {
  // Never executable (node reads it): kernels from 6.3 know to say so, and may refuse
  // executable memfds altogether (vm.memfd_noexec=2); older ones reject the flag.
  UniqueFd mem(
      memfd_create("skill-mcp-bootstrap", MFD_CLOEXEC | MFD_ALLOW_SEALING | kMfdNoexecSeal));
  if (!mem.valid() && errno == EINVAL)
    mem.reset(memfd_create("skill-mcp-bootstrap", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!mem.valid()) return false;
  // why sealed: node and the script's processes inherit it; no one may change the bytes
  // node is about to run as its main module.
  constexpr int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
  if (!WriteAll(mem.get(), kNodeBootstrap, sizeof kNodeBootstrap - 1) ||
      fcntl(mem.get(), F_ADD_SEALS, kSeals) != 0) {
    return false;
  }
  // node inherits 8 without close-on-exec; the bootstrap closes it first thing. With 3..7
  // all open (a description on a pipe) the memfd may itself be 8, which dup2 would leave
  // close-on-exec and the UniqueFd would then close.
  if (mem.get() == kWorkerBootstrapFd) {
    if (fcntl(kWorkerBootstrapFd, F_SETFD, 0) != 0) return false;
    mem.release();
    return true;
  }
  // dup2 clears close-on-exec.
  return dup2(mem.get(), kWorkerBootstrapFd) == kWorkerBootstrapFd;
}

BootstrapVia ChooseBootstrapVia(bool sealed) {
  if (sealed) {
    // why: /proc may be absent, hidden or something else in a hardened deployment; the
    // path must lead to the sealed copy itself, or node would run other bytes.
    // O_NONBLOCK: where /proc is not procfs, a FIFO there must not hang the worker.
    UniqueFd seen(open(kBootstrapPath, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    // why: node decides a main module's type by the nearest package.json, and
    // "type": "module" there would load the bootstrap as an ES module: every directory
    // above /proc/self/fd/8 must be without one (on procfs only / could hold one; the
    // others are checked for a /proc that is something else).
    bool package_above = false;
    for (const char* pj : {"/proc/self/fd/package.json", "/proc/self/package.json",
                           "/proc/package.json", "/package.json"}) {
      if (access(pj, F_OK) == 0 || errno != ENOENT) package_above = true;
    }
    if (seen.valid() && SameFile(seen.get(), kWorkerBootstrapFd) && !package_above)
      return BootstrapVia::kMainFd;
  }
  close(kWorkerBootstrapFd);
  return BootstrapVia::kEval;
}

ExecPlan::ExecPlan(const RunSpec& spec, BootstrapVia via)
    : argv_store_(BuildArgv(spec, via)), envp_store_(spec.envp) {
  argv_ = CArray(argv_store_);
  envp_ = CArray(envp_store_);
}

StepError ExecPlan::Exec() const {
  // By descriptor: the binary the broker pinned, not whatever a path names now.
  // envp is exactly the spec's block; nothing of the worker's environment is passed on.
  syscall(SYS_execveat, kWorkerNodeFd, "", argv_.data(), envp_.data(), AT_EMPTY_PATH);
  return StepError{WorkerStep::kExec, errno};
}

}  // namespace skillmcp::worker
