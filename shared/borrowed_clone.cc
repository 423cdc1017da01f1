#include "shared/borrowed_clone.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace skillmcp {
namespace {

// The child's frames are a few system-call wrappers deep.
constexpr size_t kChildStackBytes = 64 * 1024;

}  // namespace

ChildStack::ChildStack() {
  const size_t guard = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes_ = guard + kChildStackBytes;
  void* map = mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) {
    failed_ = "mmap";
    return;
  }
  map_ = map;
  char* const stack = static_cast<char*>(map) + guard;
  // why: the lowest page stays PROT_NONE, so an overflow of the child's stack faults
  // instead of writing the parent's memory beside it.
  if (mprotect(stack, kChildStackBytes, PROT_READ | PROT_WRITE) != 0) {
    failed_ = "mprotect";
    return;
  }
  top_ = stack + kChildStackBytes;
}

ChildStack::~ChildStack() {
  if (map_ != nullptr) {
    const int err = errno;
    munmap(map_, bytes_);
    errno = err;
  }
}

pid_t CloneBorrowingMemory(int (*entry)(void*), void* arg, const char** failed_call) {
  const char* ignored = nullptr;
  const char*& failed = failed_call != nullptr ? *failed_call : ignored;
  ChildStack stack;
  if (!stack.valid()) {
    failed = stack.failed();
    return -1;
  }
  // With CLONE_VM the child must not run on the caller's stack, which the caller
  // resumes on; it gets no CLONE_FILES, CLONE_FS or CLONE_SIGHAND, so what it changes
  // there (descriptors, cwd, dispositions) is its own.
  const pid_t pid = clone(entry, stack.top(), CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  if (pid < 0) failed = "clone";
  return pid;  // the stack goes now: the child has exec'd or exited (CLONE_VFORK)
}

pid_t CloneSharingMemory(int (*entry)(void*), void* arg, ChildStack& stack) {
  if (!stack.valid()) {
    errno = EINVAL;
    return -1;
  }
  sigset_t all, old_mask;
  sigfillset(&all);
  // why: the child inherits this mask and never changes it, so no handler of the
  // caller's ever runs in it, on the caller's memory, whoever signals it.
  pthread_sigmask(SIG_BLOCK, &all, &old_mask);
  const pid_t pid = clone(entry, stack.top(), CLONE_VM | SIGCHLD, arg);
  const int err = errno;
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = err;
  return pid;
}

}  // namespace skillmcp
