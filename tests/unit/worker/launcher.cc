#include "tests/unit/worker/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/run/spawn.h"

namespace skillmcp::testing {
namespace {

int OpenOrDup(const std::string& path, int fd, int flags) {
  if (fd >= 0) return fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (path.empty()) return -1;
  return open(path.c_str(), flags | O_CLOEXEC);
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The settings of the odd broker (tests/unit/worker/odd_broker.cc) a test asks for, as
// the variables that program reads and removes before it execs the worker.
std::vector<std::string> OddBrokerEnv(const Launch& launch) {
  auto list = [](const std::vector<int>& caps) {
    std::string s;
    for (int cap : caps) s += (s.empty() ? "" : ",") + std::to_string(cap);
    return s;
  };
  std::vector<std::string> env;
  if (launch.close_stdin) env.push_back("ODD_BROKER_CLOSE_STDIN=1");
  if (launch.broker_uid) env.push_back("ODD_BROKER_UID=" + std::to_string(*launch.broker_uid));
  if (!launch.broker_ambient_caps.empty())
    env.push_back("ODD_BROKER_AMBIENT=" + list(launch.broker_ambient_caps));
  if (launch.root_keeps_only_caps)
    env.push_back("ODD_BROKER_ROOT_KEEPS=" + list(*launch.root_keeps_only_caps));
  return env;
}

}  // namespace

const char* WorkerPath() { return SKILL_MCP_TEST_WORKER; }
const char* ProbePath() { return SKILL_MCP_TEST_PROBE; }

bool LaunchResult::SpawnFailed(int err_no) const {
  return failure && failure->step == static_cast<int32_t>(WorkerStep::kSpawn) &&
         failure->err == err_no;
}

bool LaunchResult::Exited() const { return WIFEXITED(wait_status); }
int LaunchResult::ExitCode() const {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}
int LaunchResult::Signal() const { return WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0; }

std::string LaunchResult::Describe() const {
  std::string s = "exit=" + std::to_string(ExitCode()) + " signal=" + std::to_string(Signal());
  if (failure)
    s += " failure{step=" + std::to_string(failure->step) + " err=" + std::to_string(failure->err) +
         "}";
  if (timed_out) s += " TIMED OUT";
  s += "\n--- stdout ---\n" + out.substr(0, 4000) + "\n--- stderr ---\n" + err.substr(0, 4000);
  return s;
}

LaunchResult RunWorker(const Launch& launch) {
  LaunchResult result;
  // The odd broker in the worker's place; it execs the worker once it has played its part.
  const UniqueFd worker(open(SKILL_MCP_TEST_ODD_BROKER, O_RDONLY | O_CLOEXEC));
  const UniqueFd prog(OpenOrDup(launch.program_path, launch.program_fd, O_RDONLY));
  const UniqueFd script(OpenOrDup(launch.script_path, launch.script_fd, O_RDONLY));
  const UniqueFd dir(OpenOrDup(launch.dir_path, -1, O_PATH | O_DIRECTORY));
  std::vector<std::string> env_store = launch.worker_env;
  for (std::string& e : OddBrokerEnv(launch)) env_store.push_back(std::move(e));
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The worker may die before reading its spec; the write must fail, not kill the test.
  signal(SIGPIPE, SIG_IGN);

  // The broker's own spawn, of the program that plays the broker the test asks for.
  SpawnRequest req;
  req.worker_fd = worker.get();
  req.node_fd = prog.get();
  req.script_fd = script.get();
  req.skill_dir_fd = dir.get();
  req.worker_envp = envp.data();
  SpawnOutcome spawned = SpawnWorker(req);
  if (!spawned.spawned) {
    result.err = spawned.error.call + " failed";
    return result;
  }
  Spawned& s = *spawned.spawned;
  const pid_t pid = s.pid;
  int spec[2] = {-1, s.spec.release()};
  int out[2] = {s.out.release(), -1};
  int err[2] = {s.err.release(), -1};
  int status[2] = {s.report.release(), -1};

  fcntl(spec[1], F_SETFL, O_NONBLOCK);
  size_t spec_off = 0;
  int spec_fd = spec[1];
  if (launch.spec_bytes.empty()) {
    close(spec_fd);
    spec_fd = -1;
  }
  int out_fd = out[0], err_fd = err[0], status_fd = status[0];
  std::string status_bytes;
  bool reaped = false;
  const double deadline = Now() + launch.timeout_seconds;
  double reaped_at = 0;
  while (true) {
    if (!reaped) {
      int ws = 0;
      if (waitpid(pid, &ws, WNOHANG) == pid) {
        reaped = true;
        result.wait_status = ws;
        reaped_at = Now();
      }
    }
    const bool pipes_open = out_fd >= 0 || err_fd >= 0 || status_fd >= 0;
    if (reaped && !pipes_open) break;
    // A grandchild may hold the pipes: settle on the worker's exit plus a short drain.
    if (reaped && Now() - reaped_at > 2.0) break;
    if (Now() > deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      if (!reaped) {
        waitpid(pid, &result.wait_status, 0);
        reaped = true;
      }
      break;
    }
    pollfd pfds[4];
    int n = 0;
    if (spec_fd >= 0) pfds[n++] = {spec_fd, POLLOUT, 0};
    for (int fd : {out_fd, err_fd, status_fd})
      if (fd >= 0) pfds[n++] = {fd, POLLIN, 0};
    poll(pfds, static_cast<nfds_t>(n), 20);
    for (int i = 0; i < n; ++i) {
      const int fd = pfds[i].fd;
      if (!pfds[i].revents) continue;
      if (fd == spec_fd) {
        const ssize_t w =
            write(fd, launch.spec_bytes.data() + spec_off, launch.spec_bytes.size() - spec_off);
        if (w > 0) spec_off += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) spec_off = launch.spec_bytes.size();  // EPIPE: worker gone
        if (spec_off >= launch.spec_bytes.size()) {
          close(spec_fd);
          spec_fd = -1;
        }
        continue;
      }
      char buf[65536];
      const ssize_t r = read(fd, buf, sizeof(buf));
      if (r <= 0) {
        close(fd);
        if (fd == out_fd) out_fd = -1;
        if (fd == err_fd) err_fd = -1;
        if (fd == status_fd) status_fd = -1;
        continue;
      }
      std::string& sink = fd == out_fd ? result.out : fd == err_fd ? result.err : status_bytes;
      if (sink.size() < (8u << 20)) sink.append(buf, static_cast<size_t>(r));
      if (fd == status_fd && !result.end) {
        const std::optional<WorkerFrames> frames = DecodeWorkerFrames(status_bytes);
        if (frames && frames->exit) {
          result.end = frames->exit;
          // POLLHUP on a pipe's read end: no writer is left.
          pollfd out_poll{out_fd, POLLIN, 0};
          result.out_held_at_end =
              out_fd >= 0 && poll(&out_poll, 1, 0) >= 0 && !(out_poll.revents & POLLHUP);
        }
      }
    }
  }
  for (int fd : {spec_fd, out_fd, err_fd, status_fd})
    if (fd >= 0) close(fd);
  kill(-pid, SIGKILL);  // leftovers in the worker's process group (it is its own session)
  const std::optional<WorkerFrames> frames = DecodeWorkerFrames(status_bytes);
  if (!frames) {
    result.err += "\nundecodable report of " + std::to_string(status_bytes.size()) + " bytes";
  } else {
    if (frames->report)
      result.failure =
          LaunchResult::Failure{static_cast<int32_t>(frames->report->step), frames->report->err};
    result.end = frames->exit;
  }
  return result;
}

}  // namespace skillmcp::testing
