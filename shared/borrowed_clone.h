// Children that share their parent's memory instead of copying it: a copy of the broker's
// address space is dear (its page tables, then a copy-on-write fault on each page the
// parent writes next, on the path of every run).
//   - CloneBorrowingMemory: until the child execs, the way glibc's posix_spawn starts a
//     program; the broker starts a worker so (broker/run/spawn.cc), and a namespace's
//     init starts node's process (worker/launch.cc).
//   - CloneSharingMemory: a child that runs beside its parent, never execs and is reaped
//     by it; the broker's uid probe (broker/run/uid_probe.cc).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace skillmcp {

// A child's stack: 64 KiB with a PROT_NONE guard page below it, so that an overflow
// faults instead of writing the parent's memory beside it; unmapped on destruction.
class ChildStack {
 public:
  ChildStack();
  ~ChildStack();
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  // False when the mapping failed: `failed()` names the call ("mmap" or "mprotect"),
  // errno says why.
  bool valid() const { return top_ != nullptr; }
  const char* failed() const { return failed_; }
  char* top() const { return top_; }
  // Never unmapped: for a child that may still run on it and cannot be reaped.
  void Abandon() { map_ = nullptr; }

 private:
  void* map_ = nullptr;
  size_t bytes_ = 0;
  char* top_ = nullptr;
  const char* failed_ = nullptr;
};

// Starts `entry(arg)` in a child made with clone(CLONE_VM | CLONE_VFORK | SIGCHLD): it
// shares the caller's memory, and the caller sleeps until the child has exec'd or exited.
// The child runs on a ChildStack of its own, unmapped before this returns. Returns the
// child's pid, or -1 with errno set and, when `failed_call` is given, the name of the
// call that failed ("mmap", "mprotect", "clone").
//
// The caller's contract: `entry` makes system calls on what the caller prepared and
// nothing else (no allocation, no write to the caller's data, no lock), then execs or
// _exits; and signals are the caller's business (a process with handlers blocks every
// signal across this call, and the child resets dispositions before its mask).
pid_t CloneBorrowingMemory(int (*entry)(void*), void* arg, const char** failed_call = nullptr);

// Starts `entry(arg)` in a child made with clone(CLONE_VM | SIGCHLD) on `stack`: it shares
// the caller's memory and both run on. Returns its pid, or -1 with errno set.
//
// The caller's contract, beyond CloneBorrowingMemory's: the child never execs, and it
// must have ended, with anything it started in the shared memory, before `stack` (and
// what `arg` points to) goes; where that cannot be known, the stack is abandoned. The
// child shares the caller's thread-local storage, errno included, which both may write
// meanwhile: nothing either decides may hang on it being right. Signals are blocked
// across this call and stay blocked in the child to its end (all but glibc's two
// internal ones): no handler of the caller's runs there.
pid_t CloneSharingMemory(int (*entry)(void*), void* arg, ChildStack& stack);

}  // namespace skillmcp
