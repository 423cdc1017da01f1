// with_unshare_denied [--net] PROGRAM ARGS...: execs PROGRAM under a seccomp filter that
// answers unshare() with EPERM, as a container profile or systemd's RestrictNamespaces=
// would; with --net, only an unshare() that asks for a network namespace (a
// RestrictNamespaces= without net). The integration tests run the broker under it to see
// how SKILL_MCP_NAMESPACES=on fails, and how the declared network mode settles on off.
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const bool net_only = argc > 1 && std::strcmp(argv[1], "--net") == 0;
  const int first = net_only ? 2 : 1;
  if (argc <= first) {
    std::fprintf(stderr, "usage: with_unshare_denied [--net] PROGRAM ARGS...\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 3;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return 4;
  const int rc =
      net_only ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                  SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_NEWNET, CLONE_NEWNET))
               : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
  if (rc != 0 || seccomp_load(ctx) != 0) return 4;
  seccomp_release(ctx);
  execv(argv[first], argv + first);
  std::perror(argv[first]);
  return 5;
}
