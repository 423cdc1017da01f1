// Runs a check in a forked child so process-wide state (dumpable, uid, capabilities,
// environ) never leaks into the test runner. The child's exit code is its verdict.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace skillmcp::testing {

// Returns the child's exit code, or 128+signal when it was killed, or -1 on fork failure.
inline int InChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(body());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace skillmcp::testing
