// with_landlock_denied PROGRAM ARGS...: execs PROGRAM under a seccomp filter that answers
// the three Landlock calls with EPERM, as a service manager's system call filter that
// does not list them would. The integration tests run the broker under it to see that
// runs go on without the allowlist (off, with the reason) unless SKILL_MCP_LANDLOCK=on.
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <initializer_list>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: with_landlock_denied PROGRAM ARGS...\n");
    return 2;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 3;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return 4;
  for (const char* name : {"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"}) {
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), seccomp_syscall_resolve_name(name), 0) != 0)
      return 4;
  }
  if (seccomp_load(ctx) != 0) return 4;
  seccomp_release(ctx);
  execv(argv[1], argv + 1);
  std::perror(argv[1]);
  return 5;
}
