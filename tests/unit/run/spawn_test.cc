// broker/run/spawn.h: the descriptor layout the child hands the worker, the one exit-code
// convention (a framed report on fd 4, the step as exit code) and the real worker
// answering through it.
#include "broker/run/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "shared/worker_protocol.h"

namespace skillmcp {
namespace {

struct Ended {
  std::string report;
  int status = 0;
};

// Writes `spec` (if any), closes fd 3's end, reads the report to EOF, reaps.
Ended Finish(Spawned& s, const std::string& spec = "") {
  if (!spec.empty()) {
    EXPECT_EQ(write(s.spec.get(), spec.data(), spec.size()), static_cast<ssize_t>(spec.size()));
  }
  s.spec.reset();
  Ended e;
  char buf[64];
  ssize_t n;
  while ((n = read(s.report.get(), buf, sizeof buf)) > 0) e.report.append(buf, n);
  EXPECT_EQ(waitpid(s.pid, &e.status, 0), s.pid);
  return e;
}

UniqueFd OpenWorker() { return UniqueFd(open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC)); }

TEST(Spawn, PlacesTheLayoutAndResetsSignalsBeforeTheExec) {
  signal(SIGPIPE, SIG_IGN);  // as the broker runs
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, nullptr);
  // In the worker's place, a program that checks the layout it was started with
  // (tests/unit/run/layout_check.cc).
  UniqueFd worker(open(SKILL_MCP_LAYOUT_CHECK, O_RDONLY | O_CLOEXEC));
  UniqueFd node(open("/bin/true", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(worker.valid() && node.valid());
  SpawnRequest req;
  req.worker_fd = worker.get();
  req.node_fd = node.get();
  SpawnOutcome o = SpawnWorker(req);
  // The caller's mask is its own again (spawn blocks every signal across the clone).
  sigset_t after;
  ASSERT_EQ(sigprocmask(SIG_BLOCK, nullptr, &after), 0);
  EXPECT_TRUE(sigismember(&after, SIGTERM));
  EXPECT_FALSE(sigismember(&after, SIGUSR1));
  EXPECT_FALSE(sigismember(&after, SIGCHLD));
  sigprocmask(SIG_UNBLOCK, &block, nullptr);
  ASSERT_TRUE(o.spawned) << o.error.call;
  Ended e = Finish(*o.spawned);
  std::optional<WorkerReport> r = DecodeWorkerReport(e.report);
  ASSERT_TRUE(r) << e.report.size();
  EXPECT_EQ(r->step, WorkerStep::kSpawn);
  EXPECT_EQ(r->err, ENOTSUP) << "the descriptor that is wrong: " << r->err - 1000;
  ASSERT_TRUE(WIFEXITED(e.status));
  EXPECT_EQ(WEXITSTATUS(e.status), static_cast<int>(WorkerStep::kSpawn));
}

TEST(Spawn, AWorkerThatCannotBeExecutedIsReportedAtTheSpawnStep) {
  char path[] = "/tmp/skillmcp-spawn-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not an ELF file", 15), 15);
  fchmod(fd, 0755);
  close(fd);
  UniqueFd bogus(open(path, O_RDONLY | O_CLOEXEC));
  unlink(path);
  SpawnRequest req;
  req.worker_fd = bogus.get();
  SpawnOutcome o = SpawnWorker(req);
  ASSERT_TRUE(o.spawned) << o.error.call;
  Ended e = Finish(*o.spawned);
  std::optional<WorkerReport> r = DecodeWorkerReport(e.report);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->step, WorkerStep::kSpawn);
  EXPECT_EQ(r->err, ENOEXEC);
  EXPECT_EQ(WEXITSTATUS(e.status), static_cast<int>(WorkerStep::kSpawn));
}

TEST(Spawn, TheRealWorkerAnswersABadDescriptionAtItsFirstStep) {
  UniqueFd worker = OpenWorker();
  SpawnRequest req;
  req.worker_fd = worker.get();
  SpawnOutcome o = SpawnWorker(req);
  ASSERT_TRUE(o.spawned) << o.error.call;
  Ended e = Finish(*o.spawned, "not a run description");
  std::optional<WorkerReport> r = DecodeWorkerReport(e.report);
  ASSERT_TRUE(r) << e.report.size();
  EXPECT_EQ(r->step, WorkerStep::kReadSpec);
  EXPECT_EQ(r->err, EINVAL);
  EXPECT_EQ(WEXITSTATUS(e.status), static_cast<int>(WorkerStep::kReadSpec));
}

TEST(Spawn, AMissingWorkerDescriptorFailsBeforeFork) {
  SpawnRequest req;  // worker_fd -1
  SpawnOutcome o = SpawnWorker(req);
  EXPECT_FALSE(o.spawned);
  EXPECT_EQ(o.error.err, EBADF);
}

}  // namespace
}  // namespace skillmcp
