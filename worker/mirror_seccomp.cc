#include "worker/mirror_seccomp.h"

#include "seccomp/load.h"

namespace skillmcp::worker {

StepResult LoadMirrorFilter(std::string_view bpf) {
  if (int rc = seccomp::LoadCompiledPolicy(bpf); rc < 0)
    return StepFailed(WorkerStep::kMirrorSeccomp, -rc);
  return StepOk();
}

}  // namespace skillmcp::worker
