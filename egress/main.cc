// skill-mcp-egress: opens outbound TCP connections on behalf of skill-mcp brokers and hands
// back each connected socket (shared/egress_wire.h). The broker decides which hosts a run
// may reach; the helper resolves the name, refuses addresses that are not global unless
// the request allows them (address_class.h), connects, and passes the descriptor on. It
// never sees a byte of the traffic and holds no secret. Its brokers come from the
// listening socket of socket activation (packaging/systemd/skill-mcp-egress.socket) or,
// started by a broker itself, from --connection-fd. egress/README.md has the whole story.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "egress/activation.h"
#include "egress/harden.h"
#include "egress/options.h"
#include "egress/server.h"
#include "shared/log.h"

namespace skillmcp::egress {
namespace {

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool SetCloexec(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0;
}

int Main(int argc, char** argv) {
  // First, before anything is read: nothing below runs with privileges it could gain.
  if (int e = HardenProcess()) {
    errno = e;
    LOG_ERROR_ERRNO("egress: cannot harden the process");
    return 1;
  }
  std::string error;
  const std::optional<Options> options = ParseOptions(argc, argv, &error);
  if (!options) {
    LOG_ERROR("egress: %s", error.c_str());
    fputs(UsageText(), stderr);
    return 2;
  }
  if (options->help) {
    fputs(UsageText(), stdout);
    return 0;
  }
  int listen_fd = -1;
  int served = -1;
  if (options->connection_fd) {
    served = *options->connection_fd;
    if (!CheckConnectionSocket(served, &error)) {
      LOG_ERROR("egress: --connection-fd: %s", error.c_str());
      return 2;
    }
  } else {
    listen_fd = TakeActivationSocket(&error);
    if (listen_fd < 0) {
      LOG_ERROR("egress: %s",
                error.empty() ? "no --connection-fd and not socket-activated" : error.c_str());
      return 2;
    }
    served = listen_fd;
  }
  if (int e = DropInheritance(served)) {
    errno = e;
    LOG_ERROR_ERRNO("egress: cannot close inherited descriptors");
    return 1;
  }
  if (!SetNonBlocking(served) || !SetCloexec(served)) {
    LOG_ERROR_ERRNO("egress: cannot set up descriptor %d", served);
    return 1;
  }
  Server server(listen_fd, listen_fd < 0 ? served : -1, options->connect_timeout_ms,
                options->request_timeout_ms);
  return server.Run();
}

}  // namespace
}  // namespace skillmcp::egress

int main(int argc, char** argv) {
  const int rc = skillmcp::egress::Main(argc, argv);
  fflush(stderr);
  // Threads may still be inside getaddrinfo for a broker that is gone: the process ends
  // without running destructors under them.
  _exit(rc);
}
