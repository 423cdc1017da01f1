// with_unshare_denied PROGRAM ARGS...: execs PROGRAM under a seccomp filter that answers
// unshare() with EPERM, as a container profile or systemd's RestrictNamespaces= would.
// The integration tests run the broker under it to see how SKILL_MCP_NAMESPACES=on fails.
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: with_unshare_denied PROGRAM ARGS...\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 3;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) != 0 ||
      seccomp_load(ctx) != 0)
    return 4;
  seccomp_release(ctx);
  execv(argv[1], argv + 1);
  std::perror(argv[1]);
  return 5;
}
