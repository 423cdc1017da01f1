// A stand-in for skill-mcp-worker that has reported its run's end and lingers, as a real
// worker does while its namespaces are torn down (worker/cell.h). It prints the pid of a
// child it leaves in a process group of its own (as a run's init handed to the broker
// when its worker is killed first), writes one WorkerExit (exit code 7) on fd 4, closes
// its output, and waits to be killed. The code 7 can only reach a receipt through that
// report: this process dies of SIGKILL. Both hold 256 MiB of touched memory, so that
// their deaths take a while (tens of milliseconds) after the SIGKILL.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "shared/worker_protocol.h"

int main() {
  constexpr size_t kHeld = size_t{256} << 20;
  if (mmap(nullptr, kHeld, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
           0) == MAP_FAILED)
    return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    setpgid(0, 0);  // out of the group the broker kills at the run's end
    for (int fd = 1; fd <= 4; ++fd) close(fd);
    for (;;) pause();
  }
  std::printf("%d\n", static_cast<int>(child));
  std::fflush(stdout);
  char frame[skillmcp::kWorkerExitBytes];
  if (!skillmcp::EncodeWorkerExit(7 << 8, frame)) return 1;
  if (write(skillmcp::kWorkerReportFd, frame, sizeof frame) != sizeof frame) return 1;
  close(1);
  close(2);
  for (;;) pause();
}
