#include "worker/exec.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "worker/node_bootstrap.h"

namespace skillmcp::worker {
namespace {

std::vector<char*> CArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> BuildArgv(const RunSpec& spec) {
  // "--" ends node's options: the script path and every argument after it reach
  // process.argv verbatim, so "--eval=..." as a file name or argument is never an option.
  std::vector<std::string> argv{"node", "-e", kNodeBootstrap, "--", spec.script_path};
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  return argv;
}

ExecPlan::ExecPlan(const RunSpec& spec) : argv_store_(BuildArgv(spec)), envp_store_(spec.envp) {
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
