#include "tests/unit/seccomp/socket_calls.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "seccomp/compile.h"

namespace skillmcp::seccomp {

std::string Answer(const SocketCall& c) {
  int pair[2] = {-1, -1};
  const long fd = c.nr == SYS_socketpair
                      ? syscall(SYS_socketpair, c.domain, c.type, c.protocol, pair)
                      : syscall(c.nr, c.domain, c.type, c.protocol);
  if (fd < 0) return strerrorname_np(errno);
  if (c.nr == SYS_socketpair) {
    close(pair[0]);
    close(pair[1]);
  } else {
    close(static_cast<int>(fd));
  }
  return "ok";
}

std::map<std::string, std::string> SocketsUnder(DoorFence fence, bool inet_fence,
                                                std::span<const SocketCall> calls) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return {{"child", "no pipe"}};
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(90);
    if (InstallWorkerPolicy(fence, inet_fence) != 0) _exit(91);
    std::string out;
    for (const SocketCall& c : calls) out += std::string(c.name) + " " + Answer(c) + "\n";
    const ssize_t n = write(pipefd[1], out.data(), out.size());
    _exit(n == static_cast<ssize_t>(out.size()) ? 0 : 92);
  }
  close(pipefd[1]);
  std::map<std::string, std::string> seen;
  if (FILE* lines = fdopen(pipefd[0], "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, lines) != nullptr) {
      std::string_view text(line);
      text.remove_suffix(text.ends_with('\n') ? 1 : 0);
      const size_t space = text.find(' ');
      seen[std::string(text.substr(0, space))] = std::string(text.substr(space + 1));
    }
    std::fclose(lines);
  } else {
    close(pipefd[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    seen["child"] = "status " + std::to_string(status);
  return seen;
}

}  // namespace skillmcp::seccomp
