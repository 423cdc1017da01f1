#include "broker/cli/serve.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "broker/audit/audit_peer.h"
#include "broker/audit/audit_sink.h"
#include "broker/cli/boot.h"
#include "broker/cli/watch.h"
#include "broker/loop/event_loop.h"
#include "broker/mcp/late_catalogue.h"
#include "broker/mcp/server.h"
#include "broker/mcp/session.h"
#include "broker/run/egress_client.h"
#include "broker/run/egress_helper.h"
#include "broker/run/namespace_probe.h"
#include "broker/run/public_suffix.h"
#include "broker/run/supervisor.h"
#include "broker/tools/deferred_run.h"
#include "broker/tools/skill_run.h"
#include "config.h"
#include "shared/log.h"
#include "shared/small_file.h"

namespace skillmcp {
namespace {

// SIGTERM/SIGINT/SIGHUP arrive through the loop, so shutdown runs in one place. The
// signals are blocked only once the descriptor exists: a failed signalfd must not leave
// them blocked for ever (the broker would then ignore SIGTERM).
UniqueFd BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  UniqueFd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (fd.valid() && sigprocmask(SIG_BLOCK, &set, nullptr) != 0) fd.reset();
  return fd;
}

// The namespace probe BootBroker left for after start (launch->namespaces_pending): with a
// fresh /proc, and again without it where only that mount is refused; then the run side
// is settled (boot.h) and `decided` is called. All on the loop.
class LateProbe {
 public:
  LateProbe(EventLoop& loop, Boot& b, LateCatalogue& catalogue, std::function<void()> decided)
      : task_(loop), b_(b), catalogue_(catalogue), decided_(std::move(decided)) {}
  void Start() {
    task_.Start(*b_.launch, /*fresh_proc=*/true, [this](NamespaceProbe p) { OnFirst(p); });
  }

 private:
  void OnFirst(NamespaceProbe first) {
    if (ProbeUndecided(first) && !retried_) {  // killed or stopped: once more, then refuse
      retried_ = true;
      return Start();
    }
    if (!ProbeAgainWithoutFreshProc(first)) return Decide(first, nullptr);
    first_ = first;
    task_.Start(*b_.launch, /*fresh_proc=*/false,
                [this](NamespaceProbe second) { Decide(first_, &second); });
  }
  void Decide(const NamespaceProbe& first, const NamespaceProbe* second) {
    std::optional<NamespaceProbe> again;
    if (second != nullptr) again = *second;
    // The decision needs the roots hidden from runs (DecideNamespaces), so the catalogue.
    catalogue_.Then([this, first, again] {
      DecideNamespaces(*b_.launch, first, again ? &*again : nullptr);
      SettleRunFacts(b_);
      decided_();
    });
  }

  NamespaceProbeTask task_;
  Boot& b_;
  LateCatalogue& catalogue_;
  std::function<void()> decided_;
  NamespaceProbe first_;
  bool retried_ = false;
};

// The way out of declared runs: the socket-activated helper's socket where one is
// configured (the systemd deployment), else a helper this broker starts for itself. A
// helper that cannot be had leaves the client null: every connection is then refused,
// never opened another way.
void StartEgress(EventLoop& loop, const LaunchConfig& launch,
                 std::unique_ptr<EgressHelperProcess>* helper,
                 std::unique_ptr<EgressClient>* client) {
  if (!launch.egress.socket_path.empty()) {
    *client = std::make_unique<EgressClient>(loop, launch.egress.socket_path);
    LOG_INFO("egress: declared runs connect through the helper at %s",
             launch.egress.socket_path.c_str());
    return;
  }
  std::string error;
  *helper = EgressHelperProcess::Start(loop, launch, &error);
  if (!*helper) {
    LOG_WARN("egress: %s; declared runs reach no host", error.c_str());
    return;
  }
  *client = std::make_unique<EgressClient>(loop, (*helper)->TakeConnection());
  LOG_INFO("egress: declared runs connect through the helper %s (pid %d)",
           launch.egress.helper_path.c_str(), static_cast<int>((*helper)->pid()));
}

// Doctor's egress line: where declared runs' connections go and whether the helper
// answers there now, asked for a loopback address it must refuse (nothing is opened).
std::string DescribeEgress(const LaunchConfig& launch) {
  if (!launch.egress_declared) return std::string("off (SKILL_MCP_NETWORK is ") +
                                      (launch.network_off ? "off" : "on") + ")";
  EventLoop loop;
  std::unique_ptr<EgressHelperProcess> helper;
  std::unique_ptr<EgressClient> client;
  StartEgress(loop, launch, &helper, &client);
  const std::string where = launch.egress.socket_path.empty()
                                ? "the helper " + launch.egress.helper_path + ", started by the broker"
                                : "the socket-activated helper at " + launch.egress.socket_path;
  if (!client) return "unreachable\n    " + where + " cannot be started; declared runs reach no host";
  std::optional<int> answered;
  client->Dial("127.0.0.1", 9, /*allow_local=*/false,
               [&answered](const EgressAnswer& a, UniqueFd) { answered = a.error; });
  for (int i = 0; i < 300 && !answered; ++i) loop.RunOnce(10);
  if (answered && *answered == EACCES) return "reachable\n    " + where + " answers";
  return "unreachable\n    " + where + (answered ? std::string(" answered ") + std::strerror(*answered)
                                                  : std::string(" did not answer within 3 s")) +
         "; declared runs reach no host";
}

}  // namespace

int RunServe() {
  // The namespace probe runs on the loop after start: the first answer does not wait
  // for it, skill_run does (DeferredRunTool).
  // The catalogue too: the first answer does not wait for the scan (LateCatalogue).
  std::unique_ptr<Boot> b = BootBroker(NamespaceProbeTiming::kDeferred, CatalogueTiming::kDeferred);
  if (!b->fatal.empty()) {
    LOG_ERROR("%s", b->fatal.c_str());
    return 1;
  }
  // Why: standalone, the environment is the user's own (docs/wire.md §4): a warning, not a
  // refusal; hosted, boot.cc refuses every run instead.
  if (!b->facts.scrub.ok && !b->facts.hosted) {
    LOG_WARN(
        "the exec-time environment block could not be wiped (%s); a same-uid process "
        "may read /proc/%d/environ",
        b->facts.scrub.detail.c_str(), getpid());
  }

  EventLoop loop;
  if (!loop.ok()) {
    LOG_ERROR_ERRNO("cannot create the event loop (epoll)");
    return 1;
  }
  Session session(loop, STDIN_FILENO, STDOUT_FILENO);
  // Declared before the run tool, so the records the tool writes as it goes (a run the
  // client left behind) still find it, and its last drain comes after them.
  AuditSink audit(loop);
  std::string audit_problem;
  if (!audit.Open(b->audit, &audit_problem)) {
    LOG_ERROR("%s", audit_problem.c_str());
    return 1;
  }
  // Who is on the other end: read once, before the loop (the user name lookup may wait).
  AuditConnection connection{ReadAuditPeer(STDIN_FILENO), {}, {}};
  RunSupervisor supervisor(loop, *b->launch, b->env);
  // The declared network mode's way out (broker/run/egress_client.h), after the supervisor
  // so that it goes first: the helper's connection closes before the runs are reaped.
  std::unique_ptr<EgressHelperProcess> egress_helper;
  std::unique_ptr<EgressClient> egress_client;
  supervisor.SpareChild([&egress_helper] { return egress_helper ? egress_helper->pid() : -1; });
  DeferredRunTool run_gate([&session] { session.HoldInput(); },
                           [&session] { session.ReleaseInput(); });
  SkillRunDeps deps;
  deps.view = CatalogueView{&b->catalogue, &b->grants};
  deps.is_set = [env = &b->env](std::string_view n) { return env->IsSet(n); };
  deps.gate = b->gate;
  deps.tokens = b->tokens.get();
  deps.runner = &supervisor;
  deps.elicit = [&session](OrderedJson params, int64_t timeout_ms,
                           std::function<void(const Json*, const Json*)> handler) {
    return session.SendRequest("elicitation/create", std::move(params), timeout_ms,
                               std::move(handler));
  };
  deps.withdraw = [&session](const Json& id) {
    session.WithdrawRequest(id, "the skill_run call this prompt was for was cancelled");
  };
  deps.audit.connection = &connection;
  for (const PinnedInterpreter& p : b->launch->interpreters)
    deps.interpreter_paths[p.name] = p.path;
  deps.show_interpreter_path = b->launch->interpreters_configured;
  deps.audit.emit = [&audit](AuditFacts facts) { audit.Emit(std::move(facts)); };
  // Once the run side is decided: the isolation line, then skill_run with the refusal
  // that holds (runs_blocked may only now be known).
  auto open_runs = [&b, &run_gate, &deps, &supervisor, &loop, &egress_helper, &egress_client] {
    if (b->launch->egress_declared && !b->runs_blocked)
      StartEgress(loop, *b->launch, &egress_helper, &egress_client);
    supervisor.UseEgressClient(egress_client.get());
    // Here, after the first answer and before skill_run opens: no preview waits for the
    // list's file, and the first initialize does not either (a missing list leaves no
    // wildcard over any suffix: IsPublicSuffix).
    if (b->launch->egress_declared) LoadPublicSuffixes();
    deps.egress = EgressPolicyOf(*b->launch);
    const std::vector<Layer> layers = ComputeLayers(b->facts);
    LOG_INFO("%s", LayersOneLine(layers).c_str());
    // why a line of its own: the operator asked for declared (or left the default), and
    // runs get no network at all instead.
    if (!b->launch->network_fallback.empty())
      LOG_WARN("network: SKILL_MCP_NETWORK=declared falls back to off: %s",
               b->launch->network_fallback.c_str());
    LOG_INFO("interpreters: %s", DescribeInterpreters(b->launch->interpreters).c_str());
    for (const Layer& l : layers)
      if (l.on) deps.audit.layers.push_back(l.name);
    deps.runs_blocked = b->runs_blocked;
    // The first run's worker, started ahead (broker/run/worker_pool.h).
    if (!b->runs_blocked) supervisor.Prestart();
    run_gate.Open(std::make_unique<SkillRunTool>(std::move(deps)));
  };
  LateCatalogue late_catalogue(loop, [&b] {
    // After the first answer too: runs wait for both (RunSupervisor refuses until then).
    CompileSeccompPolicy(*b->launch);
    LoadCatalogue(*b);
    LOG_INFO("skill-mcp %s serving %zu skill(s) from %s (%s); %zu problem(s)", SKILL_MCP_VERSION,
             b->catalogue.skills.size(), Join(b->roots.paths, ":").c_str(), b->roots.from.c_str(),
             b->catalogue.problems.size() + b->grants.problems.size());
  });
  LateProbe late_probe(loop, *b, late_catalogue, open_runs);
  McpServer server(session, CatalogueView{&b->catalogue, &b->grants}, SKILL_MCP_VERSION, &run_gate);
  server.SetLateCatalogue(&late_catalogue);
  server.SetAuditConnection(&connection);
  server.Register();
  // The live catalogue: on where inotify works unless SKILL_MCP_WATCH=off; with =on, a
  // host without inotify refuses to start rather than serve lists it says may change.
  std::unique_ptr<LiveCatalogue> live;
  if (b->watch != WatchSetting::kOff) {
    live = std::make_unique<LiveCatalogue>(loop, *b, server);
    std::string why;
    if (!live->Open(&why)) {
      if (b->watch == WatchSetting::kOn) {
        LOG_ERROR("SKILL_MCP_WATCH=on, but %s", why.c_str());
        return 1;
      }
      LOG_INFO("the skills are read once (%s); no list_changed is sent", why.c_str());
      live.reset();
    }
  }
  server.SetListsMayChange(live != nullptr);
  if (live) late_catalogue.Then([&live] { live->Start(); });
  session.OnClosed([&loop] { loop.Stop(); });
  UniqueFd sigfd = BlockTerminationSignals();
  if (!sigfd.valid()) {
    LOG_ERROR_ERRNO("cannot receive termination signals through a signalfd");
    return 1;
  }
  if (!loop.AddFd(sigfd.get(), EPOLLIN, [&loop, &sigfd](uint32_t) {
        signalfd_siginfo si{};
        if (read(sigfd.get(), &si, sizeof si) == sizeof si) {
          LOG_INFO("received signal %u; shutting down", si.ssi_signo);
        }
        loop.Stop();
      })) {
    LOG_ERROR_ERRNO("cannot watch the termination signals");
    return 1;
  }
  if (!session.Start()) {
    LOG_ERROR_ERRNO("cannot watch stdin or stdout");
    return 1;
  }
  if (isatty(STDIN_FILENO)) {
    LOG_INFO(
        "this is a stdio MCP server: start it from an MCP client (e.g. an mcpServers "
        "entry with command \"skill-mcp\")");
  }
  if (b->launch->namespaces_pending) {
    loop.AddTimer(0, [&late_probe] { late_probe.Start(); });
  } else {
    late_catalogue.Then(open_runs);
  }
  late_catalogue.Start();
  loop.Run();
  if (!late_catalogue.loaded()) {
    LOG_INFO("the client left before the skills were scanned; no script ran");
  } else if (b->launch->namespaces_pending) {
    LOG_INFO("the client left before the namespace probe had decided; no script ran");
  }
  // Why: no worker outlives its client; the group is killed and reaped before exit.
  supervisor.KillAndReapNow();
  // What the client has not read yet still reaches a client that keeps reading.
  session.DrainOutput(kExitDrainStallMs);
  // A prompt or run still open is recorded as the tool goes; then what is queued is written.
  run_gate.Close();
  audit.DrainAtExit();
  if (audit.lost() > 0)
    LOG_WARN("%llu audit record(s) could not be written (%s)",
             static_cast<unsigned long long>(audit.lost()),
             audit.to_journal() ? "the journal refused them or stayed full"
                                : "stderr was not read fast enough, or was closed");
  return 0;
}

int RunDoctorCommand() {
  std::unique_ptr<Boot> b = BootBroker();
  if (!b->fatal.empty()) {
    printf("skill-mcp cannot start with this configuration: %s\n", b->fatal.c_str());
    return 1;
  }
  int rc = RunDoctor(b->facts, stdout);
  // Where serve's audit records would go (docs/audit.md, "Where records go").
  EventLoop loop;
  AuditSink audit(loop);
  std::string why;
  if (!audit.Open(b->audit, &why)) {
    printf("audit: off\n    %s\n", why.c_str());
    return 1;
  }
  const std::string where = audit.to_journal()
                                ? "journal\n    one record per skill_run outcome to " +
                                      std::string(kJournalSocketPath) + " (journalctl -t skill-mcp)"
                                : std::string(
                                      "stderr\n    one JSON line per skill_run outcome, starting "
                                      "{\"skill_mcp_audit\":1,");
  printf("audit: %s\n", where.c_str());
  printf("watch: %s\n", DescribeWatch(*b).c_str());
  printf("egress-helper: %s\n", DescribeEgress(*b->launch).c_str());
  return rc;
}

}  // namespace skillmcp
