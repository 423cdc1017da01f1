// A child that borrows its parent's memory until it execs: the way glibc's posix_spawn
// starts a program, used by the broker to start a worker (broker/run/spawn.cc) and by a
// namespace's init to start node's process (worker/launch.cc).
#pragma once

#include <sys/types.h>

namespace skillmcp {

// Starts `entry(arg)` in a child made with clone(CLONE_VM | CLONE_VFORK | SIGCHLD): it
// shares the caller's memory, and the caller sleeps until the child has exec'd or exited.
// The child runs on a 64 KiB stack of its own with a PROT_NONE guard page below it, both
// unmapped before this returns. Returns the child's pid, or -1 with errno set and, when
// `failed_call` is given, the name of the call that failed ("mmap", "mprotect", "clone").
//
// The caller's contract: `entry` makes system calls on what the caller prepared and
// nothing else (no allocation, no write to the caller's data, no lock), then execs or
// _exits; and signals are the caller's business (a process with handlers blocks every
// signal across this call, and the child resets dispositions before its mask).
pid_t CloneBorrowingMemory(int (*entry)(void*), void* arg, const char** failed_call = nullptr);

}  // namespace skillmcp
