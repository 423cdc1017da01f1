#include "worker/spec_input.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace skillmcp::worker {

StepResult ReadRunSpec(int fd, RunSpec& out) {
  std::string bytes;
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return StepFailed(WorkerStep::kReadSpec, errno);
    }
    if (n == 0) break;  // EOF terminates the spec: the broker closed its end
    // Bounded: a broker bug or a hostile writer cannot make the worker grow without end.
    if (bytes.size() + static_cast<size_t>(n) > kRunSpecMaxBytes)
      return StepFailed(WorkerStep::kReadSpec, EMSGSIZE);
    bytes.append(buf, static_cast<size_t>(n));
  }
  std::optional<RunSpec> spec = DecodeRunSpec(bytes);
  if (!spec) return StepFailed(WorkerStep::kReadSpec, EINVAL);
  out = std::move(*spec);
  return StepOk();
}

}  // namespace skillmcp::worker
