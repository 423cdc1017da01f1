// The real worker started the way the pool starts it (broker/run/worker_pool.h), and what
// its tests send it and read back; shared by worker_pool_test.cc and view_ahead_test.cc.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "broker/run/spawn.h"
#include "shared/unique_fd.h"
#include "shared/worker_protocol.h"

namespace skillmcp::started_worker {

struct Outcome {
  std::optional<WorkerReport> report;
  int status = 0;
};

// Sends `bytes` on the spec socket with `fds` attached (none: a plain send).
inline void SendWith(int spec, const std::string& bytes, const std::vector<int>& fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  // A worker that refused what came first (6 inherited, a bad cell) may be gone already.
  const ssize_t n = sendmsg(spec, &msg, MSG_NOSIGNAL);
  EXPECT_TRUE(n == static_cast<ssize_t>(bytes.size()) ||
              (n < 0 && (errno == EPIPE || errno == ECONNRESET)))
      << n << " " << strerror(errno);
}

inline Outcome Collect(Spawned& s) {
  s.spec.reset();
  Outcome o;
  std::string report;
  char buf[64];
  ssize_t n;
  while ((n = read(s.report.get(), buf, sizeof buf)) > 0)
    report.append(buf, static_cast<size_t>(n));
  waitpid(s.pid, &o.status, 0);
  // A report, and after it the run's end where node's process was reaped.
  const std::optional<WorkerFrames> frames = DecodeWorkerFrames(report);
  if (frames) o.report = frames->report;
  return o;
}

// A run description the worker decodes: no seccomp, no namespaces, no Landlock.
inline RunSpec PlainSpec() {
  RunSpec spec;
  spec.script_path = "/nonexistent/script.js";
  spec.seccomp = false;
  return spec;
}

// The real worker as the pool starts it: a spec socket, a regular file as its "node"
// (fd 5) and, when `inherited`, its own fd 6.
inline std::optional<Spawned> StartWorker(int inherited = -1) {
  UniqueFd worker(open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC));
  UniqueFd node(open("/etc/hostname", O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(worker.valid() && node.valid());
  SpawnRequest req;
  req.worker_fd = worker.get();
  req.node_fd = node.get();
  req.spec_socket = true;
  req.script_fd = inherited;
  SpawnOutcome s = SpawnWorker(req);
  EXPECT_TRUE(s.spawned.has_value());
  return std::move(s.spawned);
}

// The namespace of `kind` ("net", "user", ...) `pid` is in, as its link reads
// ("net:[4026531840]"); "" where it cannot be read (a worker not dumpable, for anyone but
// root).
inline std::string NamespaceOf(pid_t pid, const char* kind) {
  char link[64] = {};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/" + kind;
  if (readlink(path.c_str(), link, sizeof link - 1) <= 0) return "";
  return link;
}

// Whether `pid` is blocked in recvmsg, as a worker started ahead is once its cell's steps
// are done and it waits for its description (worker/spec_input.h); false where its
// /proc/<pid>/syscall cannot be read (root can).
inline bool WaitsInRecvmsg(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/syscall");
  long nr = -1;
  return static_cast<bool>(in >> nr) && nr == SYS_recvmsg;
}

}  // namespace skillmcp::started_worker
