// Plays the odd broker a worker test asks for (tests/unit/worker/launcher.h, Launch), then
// execs the real worker. The launcher starts this program with the broker's own spawn
// (broker/run/spawn.h) in the worker's place, so descriptors 0..7 are placed as for the
// worker; what this changes after that (descriptors leaked above the layout, fd 0 closed,
// supplementary groups, a blocked and an ignored signal, another uid, ambient
// capabilities) reaches the worker through the exec, as a careless broker's state would.
//
// Its settings come as environment variables, removed before the worker's exec:
//   ODD_BROKER_CLOSE_STDIN=1, ODD_BROKER_UID=<uid>, ODD_BROKER_AMBIENT=<cap>,<cap>...,
//   ODD_BROKER_ROOT_KEEPS=<cap>,<cap>... (set, possibly empty: keep only these).
// A failure is reported as spawn's child reports one: a kSpawn report on fd 4, exit kSpawn.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/worker_protocol.h"

extern char** environ;

namespace {

constexpr std::string_view kPrefix = "ODD_BROKER_";

std::optional<std::string> Setting(const char* name) {
  const char* v = getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::vector<int> Caps(const std::string& list) {
  std::vector<int> caps;
  size_t at = 0;
  while (at < list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    caps.push_back(std::atoi(list.substr(at, comma - at).c_str()));
    at = comma + 1;
  }
  return caps;
}

[[noreturn]] void Fail(int err) {
  char frame[skillmcp::kWorkerReportBytes];
  if (skillmcp::EncodeWorkerReport({skillmcp::WorkerStep::kSpawn, err}, frame))
    (void)!write(skillmcp::kWorkerReportFd, frame, sizeof frame);
  _exit(static_cast<int>(skillmcp::WorkerStep::kSpawn));
}

// The odd broker; a failure is an errno.
int PlayTheBroker() {
  const bool close_stdin = Setting("ODD_BROKER_CLOSE_STDIN").has_value();
  const std::optional<std::string> uid_text = Setting("ODD_BROKER_UID");
  const std::vector<int> ambient = Caps(Setting("ODD_BROKER_AMBIENT").value_or(""));
  const std::optional<std::string> keeps_text = Setting("ODD_BROKER_ROOT_KEEPS");
  // A careless broker: descriptors leaked without close-on-exec above the layout, and
  // supplementary groups of its own. The worker must shed both.
  if (dup2(0, 9) < 0 || dup2(0, 42) < 0) return errno;
  if (close_stdin) close(0);
  if (!uid_text && !keeps_text) {
    const gid_t groups[] = {4, 27, 100};
    if (syscall(SYS_setgroups, 3, groups) != 0) return errno;
  }
  // Like a broker with an event loop: SIGTERM blocked, SIGPIPE ignored. The worker must
  // hand the script a clean signal state.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (uid_text) {
    const uid_t id = static_cast<uid_t>(std::strtoul(uid_text->c_str(), nullptr, 10));
    if (!ambient.empty() && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return errno;
    if (syscall(SYS_setgroups, 0, nullptr) || syscall(SYS_setresgid, id, id, id) ||
        syscall(SYS_setresuid, id, id, id))
      return errno;
    if (!ambient.empty()) {
      __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct data[2] = {};
      for (int cap : ambient) {
        data[cap / 32].permitted |= 1u << (cap % 32);
        data[cap / 32].inheritable |= 1u << (cap % 32);
      }
      if (syscall(SYS_capset, &hdr, data) != 0) return errno;
      for (int cap : ambient)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) return errno;
    }
  }
  if (keeps_text) {
    const std::vector<int> keeps = Caps(*keeps_text);
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0) return errno;
    data[0].inheritable = data[1].inheritable = 0;
    for (int cap : keeps) data[cap / 32].inheritable |= 1u << (cap % 32);
    if (syscall(SYS_capset, &hdr, data) != 0) return errno;
    for (int cap : keeps)
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) return errno;
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT, 0, 0, 0) != 0) return errno;
  }
  return 0;
}

}  // namespace

int main() {
  // The worker, opened before the uid may change (the new uid need not reach it), and
  // above the descriptors it will be handed, so none of its slots is taken.
  const int opened = open(SKILL_MCP_TEST_WORKER, O_RDONLY | O_CLOEXEC);
  if (opened < 0) Fail(errno);
  const int worker = fcntl(opened, F_DUPFD_CLOEXEC, 64);
  if (worker < 0) Fail(errno);
  close(opened);
  if (int err = PlayTheBroker(); err != 0) Fail(err);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, kPrefix.size()) != kPrefix) env.push_back(*e);
  env.push_back(nullptr);
  char arg0[] = "skill-mcp-worker";
  char* argv[] = {arg0, nullptr};
  syscall(SYS_execveat, worker, "", argv, env.data(), AT_EMPTY_PATH);
  Fail(errno);
}
