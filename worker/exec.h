// Step kExec: the interpreter by descriptor, with exactly the spec's environment.
#pragma once

#include <string>
#include <vector>

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// Where the bootstrap's sealed copy waits for node (worker-private: the broker never
// sees it). node opens it as its main module by the path below.
inline constexpr int kWorkerBootstrapFd = 8;
inline constexpr char kBootstrapPath[] = "/proc/self/fd/8";

// How node is given the bootstrap (worker/node_bootstrap.h).
enum class BootstrapVia : bool {
  kEval,    // node -e <bootstrap> -- <script> <args...>
  kMainFd,  // node --preserve-symlinks-main /proc/self/fd/8 <script> <args...>
};

// Pure: the argv for the spec (python3's way does not depend on `via`).
std::vector<std::string> BuildArgv(const RunSpec& spec, BootstrapVia via);

// Best effort, before the limits (RLIMIT_FSIZE would cut the write): the bootstrap in a
// sealed memfd at kWorkerBootstrapFd, inherited by node. False leaves 8 closed.
bool SealBootstrap();

// In node's process or the init that clones it (worker/launch.h), once the view and the
// Landlock domain node has are final (the paths below are absolute, so the cwd is not): true
// when node will read exactly the sealed bootstrap at kBootstrapPath and run it as
// CommonJS. Otherwise closes kWorkerBootstrapFd (the caller then uses kEval).
BootstrapVia ChooseBootstrapVia(bool sealed);

// Holds argv/envp as C arrays, built before seccomp so the exec itself allocates nothing.
class ExecPlan {
 public:
  ExecPlan(const RunSpec& spec, BootstrapVia via);
  // execveat(kWorkerNodeFd, "", argv, envp, AT_EMPTY_PATH); returns only on failure.
  StepError Exec() const;

 private:
  std::vector<std::string> argv_store_;
  std::vector<std::string> envp_store_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

}  // namespace skillmcp::worker
