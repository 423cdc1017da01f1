#include "broker/cli/serve.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <set>
#include <string>

#include "broker/catalogue/scan.h"
#include "broker/cli/roots.h"
#include "broker/grants/grants.h"
#include "broker/harden/credentials.h"
#include "broker/harden/env_store.h"
#include "broker/harden/environ_scrub.h"
#include "broker/harden/process_harden.h"
#include "broker/loop/event_loop.h"
#include "broker/mcp/server.h"
#include "broker/mcp/session.h"
#include "config.h"
#include "shared/log.h"

extern char** environ;

namespace skillmcp {
namespace {

// SIGTERM/SIGINT/SIGHUP arrive through the loop, so shutdown runs in one place.
UniqueFd BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  return UniqueFd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

int RunServe() {
  ProcessHardening hardening = HardenProcess();
  if (!hardening.detail.empty()) LOG_WARN("process hardening: %s", hardening.detail.c_str());

  EnvStore env = EnvStore::Capture(environ);
  ScrubResult scrub = ScrubEnviron();
  if (auto dir = env.GetConfig("CREDENTIALS_DIRECTORY")) {
    CredentialsResult creds = LoadCredentials(*dir, env);
    for (const auto& r : creds.refused) LOG_WARN("credential refused: %s", r.c_str());
    if (!creds.detail.empty()) LOG_WARN("credentials: %s", creds.detail.c_str());
  }
  std::set<std::string> present;
  for (const auto& n : env.Names()) present.insert(n);
  auto is_present = [&present](std::string_view n) { return present.count(std::string(n)) > 0; };
  bool hosted = IsHosted(is_present);
  if (!scrub.ok && !hosted) {
    LOG_WARN("the exec-time environment block could not be wiped (%s); a same-uid process "
             "may read /proc/%d/environ",
             scrub.detail.c_str(), getpid());
  }

  Roots roots = ResolveRoots(env);
  Catalogue catalogue = ScanCatalogue(roots.paths, roots.from);
  GrantDecision grants = DecideGrants(
      catalogue, [&env](std::string_view n) { return env.GetConfig(n); }, is_present);

  EventLoop loop;
  Session session(loop, STDIN_FILENO, STDOUT_FILENO);
  CatalogueView view{&catalogue, &grants};
  McpServer server(session, view, SKILL_MCP_VERSION, nullptr);
  server.Register();
  session.OnClosed([&loop] { loop.Stop(); });
  UniqueFd sigfd = BlockTerminationSignals();
  loop.AddFd(sigfd.get(), EPOLLIN, [&loop, &sigfd](uint32_t) {
    signalfd_siginfo si{};
    if (read(sigfd.get(), &si, sizeof si) == sizeof si) {
      LOG_INFO("received signal %u; shutting down", si.ssi_signo);
    }
    loop.Stop();
  });
  if (!session.Start()) {
    LOG_ERROR_ERRNO("cannot watch stdin");
    return 1;
  }
  LOG_INFO("skill-mcp %s serving %zu skill(s) from %s (%s); %zu problem(s)%s",
           SKILL_MCP_VERSION, catalogue.skills.size(), Join(roots.paths, ":").c_str(),
           roots.from.c_str(), catalogue.problems.size() + grants.problems.size(),
           isatty(STDIN_FILENO) ? "; this is a stdio MCP server: start it from an MCP client "
                                  "(e.g. an mcpServers entry with command \"skill-mcp\")"
                                : "");
  loop.Run();
  return 0;
}

}  // namespace skillmcp
