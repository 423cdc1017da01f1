// Step kExec: the interpreter by descriptor, with exactly the spec's environment.
#pragma once

#include <string>
#include <vector>

#include "shared/worker_protocol.h"
#include "worker/step_result.h"

namespace skillmcp::worker {

// Pure: the argv for the spec: node -e <bootstrap> -- <script> <args...>.
std::vector<std::string> BuildArgv(const RunSpec& spec);

// Holds argv/envp as C arrays, built before seccomp so the exec itself allocates nothing.
class ExecPlan {
 public:
  explicit ExecPlan(const RunSpec& spec);
  // execveat(kWorkerNodeFd, "", argv, envp, AT_EMPTY_PATH); returns only on failure.
  StepError Exec() const;

 private:
  std::vector<std::string> argv_store_;
  std::vector<std::string> envp_store_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

}  // namespace skillmcp::worker
