// Hardening the broker applies to itself first thing in main, before it reads any
// configuration: no dumping (so a same-uid process cannot read /proc/<pid>/mem or
// environ, or attach with ptrace), no core files, fds 0-2 always present, SIGPIPE off.
#pragma once

#include <string>

namespace skillmcp {

struct ProcessHardening {
  bool dumpable_off = false;  // prctl(PR_GET_DUMPABLE) reads 0 afterwards
  bool core_off = false;      // RLIMIT_CORE soft and hard are 0
  bool sigpipe_ignored = false;
  bool std_fds_ok = false;  // 0, 1 and 2 are open (missing ones now /dev/null)
  int std_fds_opened = 0;   // how many of 0-2 had to be opened
  std::string detail;       // what failed, empty when everything holds
};

ProcessHardening HardenProcess();

// Opens /dev/null onto each of fds 0-2 that is not open. Returns false when one is
// missing and could not be provided; `opened` counts the ones supplied.
bool EnsureStdFds(int* opened);

// Sets the process non-dumpable again and checks it (a uid change resets the flag to
// fs.suid_dumpable, so the privilege switch calls this after it). True when it is 0.
bool MakeNonDumpable();

}  // namespace skillmcp
