#include "worker/report.h"

#include <unistd.h>

#include <cerrno>

#include "shared/run_spec.h"

namespace skillmcp::worker {

void FailAndExit(const StepError& error) {
  const WorkerFailure failure{static_cast<int32_t>(error.step), error.err};
  // 8 bytes into a pipe are written atomically or not at all; a missing or closed status
  // fd still leaves the exit code, so the result of the write is not needed.
  ssize_t n;
  do {
    n = write(kWorkerStatusFd, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  _exit(static_cast<int>(error.step));
}

}  // namespace skillmcp::worker
