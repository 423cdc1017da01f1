#include "shared/borrowed_clone.h"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace skillmcp {
namespace {

// The child's frames are a few system-call wrappers deep.
constexpr size_t kChildStackBytes = 64 * 1024;

}  // namespace

pid_t CloneBorrowingMemory(int (*entry)(void*), void* arg, const char** failed_call) {
  const char* ignored = nullptr;
  const char*& failed = failed_call != nullptr ? *failed_call : ignored;
  const size_t guard = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t total = guard + kChildStackBytes;
  void* map = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) {
    failed = "mmap";
    return -1;
  }
  char* const stack = static_cast<char*>(map) + guard;
  // why: the lowest page stays PROT_NONE, so an overflow of the child's stack faults
  // instead of writing the parent's memory beside it.
  if (mprotect(stack, kChildStackBytes, PROT_READ | PROT_WRITE) != 0) {
    const int err = errno;
    munmap(map, total);
    errno = err;
    failed = "mprotect";
    return -1;
  }
  // With CLONE_VM the child must not run on the caller's stack, which the caller
  // resumes on; it gets no CLONE_FILES, CLONE_FS or CLONE_SIGHAND, so what it changes
  // there (descriptors, cwd, dispositions) is its own.
  const pid_t pid = clone(entry, stack + kChildStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  const int err = errno;
  munmap(map, total);  // the child has exec'd or exited: CLONE_VFORK
  if (pid < 0) failed = "clone";
  errno = err;
  return pid;
}

}  // namespace skillmcp
