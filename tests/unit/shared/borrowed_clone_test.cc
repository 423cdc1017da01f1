// shared/borrowed_clone.h: the child shares the caller's memory, the caller waits for it,
// and its stack has a guard page below it and is gone once the call returns.
#include "shared/borrowed_clone.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace skillmcp {
namespace {

// Filled by the child on the caller's memory with system calls only.
struct Probe {
  uintptr_t stack_address = 0;
  char maps[1 << 16] = {};
  long maps_len = 0;
  int exit_code = 0;
};

int ReadMapsAndExit(void* arg) {
  auto* probe = static_cast<Probe*>(arg);
  int local = 0;
  probe->stack_address = reinterpret_cast<uintptr_t>(&local);
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    long n;
    while (probe->maps_len < static_cast<long>(sizeof probe->maps) - 1 &&
           (n = read(fd, probe->maps + probe->maps_len, sizeof probe->maps - 1 - probe->maps_len)) >
               0)
      probe->maps_len += n;
    close(fd);
  }
  _exit(probe->exit_code);
}

struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string perms;
};

// The mapping of `maps` that holds `address`, and the one just below it.
bool FindMapping(const char* maps, uintptr_t address, Mapping* holder, Mapping* below) {
  bool found = false;
  Mapping previous;
  for (const char* line = maps; *line != '\0';) {
    Mapping m;
    char perms[8] = {};
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &m.start, &m.end, perms) == 3) {
      m.perms = perms;
      if (m.start <= address && address < m.end) {
        *holder = m;
        *below = previous;
        found = true;
      }
      previous = m;
    }
    const char* next = std::strchr(line, '\n');
    if (next == nullptr) break;
    line = next + 1;
  }
  return found;
}

TEST(CloneBorrowingMemory, TheChildWritesTheCallersMemoryAndTheCallerWaitsForIt) {
  static Probe probe;  // large: not on this stack
  probe = Probe{};
  probe.exit_code = 7;
  const pid_t pid = CloneBorrowingMemory(ReadMapsAndExit, &probe);
  ASSERT_GT(pid, 0) << std::strerror(errno);
  // CLONE_VFORK: the child has exited by now, and what it wrote is here, unsynchronised.
  EXPECT_NE(probe.stack_address, 0u);
  EXPECT_GT(probe.maps_len, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

// why: an overflow of the child's stack must fault, not write the caller's memory.
// The stack's own mapping may have merged with a read-write mapping right above it on
// some kernels (without a flag of MAP_STACK's own), so its range is taken from where its
// mapping starts, which nothing can merge below: the PROT_NONE page is there.
TEST(CloneBorrowingMemory, TheChildsStackHasAGuardPageAndIsUnmappedAfterwards) {
  static Probe probe;
  probe = Probe{};
  const pid_t pid = CloneBorrowingMemory(ReadMapsAndExit, &probe);
  ASSERT_GT(pid, 0) << std::strerror(errno);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  Mapping stack, below;
  ASSERT_TRUE(FindMapping(probe.maps, probe.stack_address, &stack, &below))
      << "the child's stack is not in its maps";
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t stack_bytes = 64 * 1024;
  EXPECT_EQ(stack.perms.substr(0, 3), "rw-");
  EXPECT_LT(probe.stack_address, stack.start + stack_bytes) << "the stack is 64 KiB";
  EXPECT_GE(stack.end - stack.start, stack_bytes);
  EXPECT_EQ(below.end, stack.start) << "nothing directly below the stack";
  EXPECT_EQ(below.perms.substr(0, 3), "---") << "the page below is not a guard";
  // Gone once the call returned, the guard page with it: mincore fails with ENOMEM on a
  // range with an unmapped page.
  unsigned char vec[(64 * 1024) / 4096 + 1];
  errno = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(stack.start - page), page, vec), -1);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(stack.start), stack_bytes, vec), -1);
  EXPECT_EQ(errno, ENOMEM);
}

}  // namespace
}  // namespace skillmcp
