#include "broker/run/namespace_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "broker/run/launch_config.h"
#include "broker/run/spawn.h"
#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

bool WriteAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads fd to EOF, keeping at most one report frame and a byte more (so a longer
// answer is seen as malformed).
std::string ReadReport(int fd) {
  std::string got;
  char buf[64];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (got.size() <= kWorkerReportBytes) got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

}  // namespace

NamespaceProbe ProbeRunNamespaces(const LaunchConfig& config, bool fresh_proc) {
  RunSpec spec;
  spec.probe = true;
  spec.fresh_proc = fresh_proc;
  spec.seccomp = false;
  spec.switch_ids = config.switch_ids;
  spec.uid = config.uid;
  spec.gid = config.gid;
  std::optional<std::string> encoded = EncodeRunSpec(spec);
  if (!encoded) return {EINVAL};
  SpawnRequest req;
  req.worker_fd = config.worker.get();
  req.raise_ambient_setid = config.switch_ids && geteuid() != 0;
  SpawnOutcome spawned = SpawnWorker(req);
  if (!spawned.spawned) return {spawned.error.err};
  Spawned& s = *spawned.spawned;
  // EPIPE (the worker died first) shows in its report; SIGPIPE is ignored in the broker.
  WriteAll(s.spec.get(), *encoded);
  s.spec.reset();
  const std::string report = ReadReport(s.report.get());
  int status = 0;
  while (waitpid(s.pid, &status, 0) < 0) {
    if (errno != EINTR) return {errno};
  }
  if (std::optional<WorkerReport> r = DecodeWorkerReport(report))
    return {r->err ? r->err : EPROTO, r->step};
  if (!report.empty()) return {EPROTO};  // why: an answer we cannot read is a failure
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {ECHILD};
  return {};
}

}  // namespace skillmcp
