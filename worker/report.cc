#include "worker/report.h"

#include <unistd.h>

#include <cerrno>

#include "shared/worker_protocol.h"

namespace skillmcp::worker {

void FailAndExit(const StepError& error) {
  char frame[kWorkerReportBytes];
  // 16 bytes into a pipe are written atomically or not at all; a missing or closed
  // report fd still leaves the exit code, so the result of the write is not needed.
  if (EncodeWorkerReport({error.step, error.err}, frame)) {
    ssize_t n;
    do {
      n = write(kWorkerReportFd, frame, sizeof frame);
    } while (n < 0 && errno == EINTR);
  }
  _exit(static_cast<int>(error.step));
}

void ReportRunEnd(int wait_status) {
  char frame[kWorkerExitBytes];
  if (!EncodeWorkerExit(wait_status, frame)) return;
  ssize_t n;
  do {
    n = write(kWorkerReportFd, frame, sizeof frame);
  } while (n < 0 && errno == EINTR);
}

}  // namespace skillmcp::worker
