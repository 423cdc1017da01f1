// serve probes the run namespaces on its loop after start (broker/cli/serve.cc): the
// asynchronous probe must reach the very decision the synchronous one (doctor) does, and
// no run may start while it is pending.
#include <gtest/gtest.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "broker/loop/event_loop.h"
#include "broker/run/launch_config.h"
#include "broker/run/namespace_probe.h"
#include "broker/run/supervisor.h"
#include "tests/unit/run/start_run.h"

namespace skillmcp {
namespace {

EnvStore WorkingEnv(const char* namespaces) {
  EnvStore env;
  env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  env.Set("SKILL_MCP_NODE", "/usr/bin/node");
  env.Set("SKILL_MCP_NAMESPACES", namespaces);
  return env;
}

// Runs one probe on a loop of its own; the loop spins until `done`.
NamespaceProbe ProbeOnLoop(const LaunchConfig& c, bool fresh_proc) {
  EventLoop loop;
  NamespaceProbeTask task(loop);
  std::optional<NamespaceProbe> got;
  task.Start(c, fresh_proc, [&got](NamespaceProbe p) { got = p; });
  while (!got) loop.RunOnce(1000);
  EXPECT_FALSE(task.running());
  return *got;
}

// The deferred decision as serve takes it: probe (again without a fresh /proc where only
// that mount failed), then DecideNamespaces.
void DecideOnLoop(LaunchConfig& c) {
  NamespaceProbe first = ProbeOnLoop(c, true);
  if (!ProbeAgainWithoutFreshProc(first)) return DecideNamespaces(c, first, nullptr);
  NamespaceProbe second = ProbeOnLoop(c, false);
  DecideNamespaces(c, first, &second);
}

bool SameDecision(const LaunchConfig& a, const LaunchConfig& b) {
  return a.namespaces == b.namespaces && a.fresh_proc == b.fresh_proc &&
         a.namespaces_problem == b.namespaces_problem &&
         a.namespaces_off_reason == b.namespaces_off_reason &&
         a.fresh_proc_problem == b.fresh_proc_problem && a.refusal == b.refusal &&
         !a.namespaces_pending && !b.namespaces_pending;
}

TEST(DeferredProbe, LeavesTheLayerUndecidedUntilTheProbeAnswers) {
  LaunchConfigResult r =
      ResolveLaunchConfig(WorkingEnv("on"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(r.config.has_value()) << r.error;
  EXPECT_TRUE(r.config->namespaces_pending);
  EXPECT_TRUE(r.config->refusal.empty()) << r.config->refusal;
  EXPECT_FALSE(r.config->fresh_proc);
  // Off: nothing to probe, nothing pending.
  LaunchConfigResult off =
      ResolveLaunchConfig(WorkingEnv("off"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(off.config.has_value());
  EXPECT_FALSE(off.config->namespaces_pending);
}

TEST(DeferredProbe, OnTheLoopItDecidesWhatTheSynchronousProbeDecides) {
  for (const char* mode : {"auto", "on"}) {
    LaunchConfigResult now = ResolveLaunchConfig(WorkingEnv(mode), PrivilegeState{});
    LaunchConfigResult later =
        ResolveLaunchConfig(WorkingEnv(mode), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
    ASSERT_TRUE(now.config && later.config);
    DecideOnLoop(*later.config);
    EXPECT_TRUE(SameDecision(*now.config, *later.config))
        << mode << ": " << now.config->namespaces_problem << now.config->namespaces_off_reason
        << " | " << later.config->namespaces_problem << later.config->namespaces_off_reason;
  }
}

// Where mount is refused the probe fails: the deferred decision carries the same reason
// and, with the layer demanded, the same refusal of every run.
TEST(DeferredProbe, AFailedProbeOnTheLoopRefusesOrTurnsOffAsAtBoot) {
  const pid_t pid = fork();
  if (pid == 0) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mount), 0) != 0 ||
        seccomp_load(ctx) != 0)
      _exit(10);
    for (const char* mode : {"auto", "on"}) {
      LaunchConfigResult now = ResolveLaunchConfig(WorkingEnv(mode), PrivilegeState{});
      LaunchConfigResult later =
          ResolveLaunchConfig(WorkingEnv(mode), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
      if (!now.config || !later.config) _exit(11);
      if (!later.config->ready()) _exit(12);  // pending: nothing refused yet
      DecideOnLoop(*later.config);
      if (!SameDecision(*now.config, *later.config)) _exit(13);
      if (later.config->ready() != (std::string(mode) == "auto")) _exit(14);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no filter, 11: no config, 12: refused while pending, "
                                       "13: another decision, 14: runs on/off wrongly";
}

// SetHiddenRoots runs before a deferred probe has answered; its limit then waits, so the
// reason reported is the one the synchronous order gives (the probe's failure first).
TEST(DeferredProbe, TheHiddenRootsLimitWaitsForTheDecision) {
  std::vector<std::string> dirs;
  for (size_t i = 0; i <= kRunSpecMaxHiddenRoots; ++i)
    dirs.push_back("/srv/root" + std::to_string(i) + "/skill");
  const NamespaceProbe failed{EPERM, WorkerStep::kUserNamespace};
  for (const NamespaceProbe& probe : {NamespaceProbe{}, failed}) {
    LaunchConfig now;  // probe, then the lists (boot's order)
    now.namespaces = now.namespaces_demanded = true;
    DecideNamespaces(now, probe, nullptr);
    SetHiddenRoots(now, {}, dirs);
    LaunchConfig later;  // the lists while pending, then the probe (serve's order)
    later.namespaces = later.namespaces_demanded = later.namespaces_pending = true;
    SetHiddenRoots(later, {}, dirs);
    EXPECT_TRUE(later.namespaces_problem.empty()) << "decided before the probe answered";
    DecideNamespaces(later, probe, nullptr);
    EXPECT_FALSE(later.namespaces_problem.empty());
    EXPECT_TRUE(SameDecision(now, later))
        << now.namespaces_problem << " | " << later.namespaces_problem;
  }
}

// why: fail closed; even if a call got past serve's gate, the supervisor refuses it.
TEST(DeferredProbe, NoRunStartsWhileTheProbeIsPending) {
  LaunchConfigResult r =
      ResolveLaunchConfig(WorkingEnv("auto"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(r.config.has_value());
  ASSERT_TRUE(r.config->namespaces_pending);
  EventLoop loop;
  EnvStore env;
  RunSupervisor supervisor(loop, *r.config, env);
  bool called = false;
  std::optional<StartRefusal> refused =
      StartRun(supervisor, PreparedRun{}, [&called](RunResult) { called = true; });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->problem, StartProblem::kUnavailable);
  EXPECT_NE(refused->detail.find("probe"), std::string::npos) << refused->detail;
  // Decided, but the skills not scanned yet: still refused (the hidden roots are unknown).
  r.config->namespaces_pending = false;
  refused = StartRun(supervisor, PreparedRun{}, [&called](RunResult) { called = true; });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->problem, StartProblem::kUnavailable);
  EXPECT_NE(refused->detail.find("scanned"), std::string::npos) << refused->detail;
  // Scanned (SetHiddenRoots), but the seccomp policy not compiled yet: still refused.
  SetHiddenRoots(*r.config, {"/nonexistent-skills-root"}, {});
  EXPECT_FALSE(r.config->hidden_roots_pending);
  ASSERT_TRUE(r.config->seccomp_pending);
  refused = StartRun(supervisor, PreparedRun{}, [&called](RunResult) { called = true; });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->problem, StartProblem::kUnavailable);
  EXPECT_NE(refused->detail.find("seccomp"), std::string::npos) << refused->detail;
  // The control: compiled too, the same call gets as far as the (missing) script descriptor.
  CompileSeccompPolicy(*r.config);
  EXPECT_FALSE(r.config->seccomp_pending);
  refused = StartRun(supervisor, PreparedRun{}, [&called](RunResult) { called = true; });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->problem, StartProblem::kSystem);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

// Runs one probe whose worker is sent `sig` as soon as it exists.
NamespaceProbe ProbeSignalled(const LaunchConfig& c, int sig, int64_t deadline_ms) {
  EventLoop loop;
  NamespaceProbeTask task(loop, deadline_ms);
  std::optional<NamespaceProbe> got;
  task.Start(c, true, [&got](NamespaceProbe p) { got = p; });
  EXPECT_TRUE(task.running());
  if (task.running()) kill(task.pid(), sig);
  for (int i = 0; i < 200 && !got; ++i) loop.RunOnce(100);
  if (sig == SIGSTOP && task.running()) kill(task.pid(), SIGKILL);
  EXPECT_TRUE(got.has_value()) << "the probe never finished";
  return got.value_or(NamespaceProbe{-1});
}

// Serve compiles the policy after its first answer: until then there is none, and the
// late compilation yields exactly the program a boot-time one does.
TEST(DeferredProbe, TheSeccompPolicyIsCompiledLaterToTheSameProgram) {
  LaunchConfigResult now = ResolveLaunchConfig(WorkingEnv("off"), PrivilegeState{});
  LaunchConfigResult later =
      ResolveLaunchConfig(WorkingEnv("off"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(now.config.has_value() && later.config.has_value());
  EXPECT_FALSE(now.config->seccomp_pending);
  EXPECT_FALSE(now.config->seccomp_bpf.empty());
  EXPECT_TRUE(later.config->seccomp_pending);
  EXPECT_TRUE(later.config->seccomp_bpf.empty());
  CompileSeccompPolicy(*later.config);
  EXPECT_FALSE(later.config->seccomp_pending);
  EXPECT_EQ(later.config->seccomp_bpf, now.config->seccomp_bpf);
  EXPECT_EQ(later.config->refusal, now.config->refusal);
  CompileSeccompPolicy(*later.config);  // once only: a second call changes nothing
  EXPECT_EQ(later.config->seccomp_bpf, now.config->seccomp_bpf);
}

// A process of the run-as uid can stop the probe: the deadline kills it, and the loop
// goes on (the held skill_run gets its answer).
TEST(DeferredProbe, AStoppedProbeEndsAtItsDeadline) {
  LaunchConfigResult r =
      ResolveLaunchConfig(WorkingEnv("auto"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(r.config.has_value()) << r.error;
  NamespaceProbe p = ProbeSignalled(*r.config, SIGSTOP, 300);
  EXPECT_EQ(p.err, ETIMEDOUT);
  EXPECT_TRUE(ProbeUndecided(p));
}

// Killed or timed out, the probe says nothing about the host: auto must not read it as
// "no namespaces here" (runs would go on without them); runs are refused instead.
TEST(DeferredProbe, AKilledProbeRefusesRunsInsteadOfTurningAutoOff) {
  for (int sig : {SIGKILL, SIGSTOP}) {
    LaunchConfigResult r =
        ResolveLaunchConfig(WorkingEnv("auto"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
    ASSERT_TRUE(r.config.has_value()) << r.error;
    NamespaceProbe p = ProbeSignalled(*r.config, sig, 300);
    ASSERT_TRUE(ProbeUndecided(p)) << sig << " err " << p.err;
    DecideNamespaces(*r.config, p, nullptr);
    EXPECT_FALSE(r.config->namespaces_pending);
    EXPECT_FALSE(r.config->namespaces);
    EXPECT_TRUE(r.config->namespaces_off_reason.empty()) << r.config->namespaces_off_reason;
    EXPECT_NE(r.config->refusal.find("the namespace probe did not finish"), std::string::npos)
        << r.config->refusal;
  }
}

// A probe that failed at a step of its own is a real answer: auto turns off, as before.
TEST(DeferredProbe, AStepFailureIsStillAnAnswer) {
  LaunchConfigResult r =
      ResolveLaunchConfig(WorkingEnv("auto"), PrivilegeState{}, NamespaceProbeTiming::kDeferred);
  ASSERT_TRUE(r.config.has_value()) << r.error;
  NamespaceProbe p{EPERM, WorkerStep::kUserNamespace};
  EXPECT_FALSE(ProbeUndecided(p));
  DecideNamespaces(*r.config, p, nullptr);
  EXPECT_TRUE(r.config->refusal.empty()) << r.config->refusal;
  EXPECT_NE(r.config->namespaces_off_reason.find("auto runs without them"), std::string::npos);
}

// A config whose probe is pending, with the namespaces demanded and the declared mode
// (and the seccomp fence, so off can hold).
LaunchConfig Pending() {
  LaunchConfig c;
  c.namespaces = c.namespaces_demanded = c.namespaces_pending = true;
  c.seccomp = true;
  c.network_mode = NetworkMode::kDeclared;
  return c;
}

bool Names(const std::string& text, int err) {
  return text.find(std::strerror(err)) != std::string::npos;
}

// The run's own network is the step a probe tries last, once every namespace held: its
// failure settles the declared mode on off, with the reason, and leaves the namespaces on.
TEST(DecideNamespaces, AFailedOwnNetworkSettlesDeclaredOnOffAndKeepsTheNamespaces) {
  LaunchConfig c = Pending();
  DecideNamespaces(c, NamespaceProbe{EPERM, WorkerStep::kOwnNetwork}, nullptr);
  EXPECT_TRUE(c.namespaces);
  EXPECT_TRUE(c.fresh_proc);
  EXPECT_TRUE(c.namespaces_problem.empty()) << c.namespaces_problem;
  EXPECT_TRUE(c.refusal.empty()) << c.refusal;
  EXPECT_NE(c.network_problem.find("a network namespace of its own"), std::string::npos)
      << c.network_problem;
  EXPECT_TRUE(Names(c.network_problem, EPERM)) << c.network_problem;
  EXPECT_TRUE(c.network_off);
  EXPECT_FALSE(c.egress_declared);
  EXPECT_EQ(c.network_fallback, c.network_problem);
}

// With a second probe (no fresh /proc), the second is the last: its network step is the
// one that counts, and the fresh /proc problem still names the first probe's error.
TEST(DecideNamespaces, WithTwoProbesTheSecondSaysWhatTheNetworkIs) {
  LaunchConfig c = Pending();
  const NamespaceProbe second{EPERM, WorkerStep::kOwnNetwork};
  DecideNamespaces(c, NamespaceProbe{EACCES, WorkerStep::kMountProc}, &second);
  EXPECT_TRUE(c.namespaces);
  EXPECT_FALSE(c.fresh_proc);
  EXPECT_TRUE(c.refusal.empty()) << c.refusal;
  EXPECT_TRUE(Names(c.fresh_proc_problem, EACCES)) << c.fresh_proc_problem;
  EXPECT_TRUE(Names(c.network_problem, EPERM)) << c.network_problem;
  EXPECT_TRUE(c.network_off);
  // The second probe's network held: declared stays declared.
  LaunchConfig held = Pending();
  const NamespaceProbe whole{};
  DecideNamespaces(held, NamespaceProbe{EACCES, WorkerStep::kMountProc}, &whole);
  EXPECT_TRUE(held.network_problem.empty()) << held.network_problem;
  EXPECT_TRUE(held.egress_declared);
}

// A decision replaces the last one's network problem: a probe whose network held clears it.
TEST(DecideNamespaces, AProbeWhoseNetworkHeldClearsAnEarlierProblem) {
  LaunchConfig c = Pending();
  c.network_problem = "an earlier probe's";
  DecideNamespaces(c, NamespaceProbe{}, nullptr);
  EXPECT_TRUE(c.network_problem.empty()) << c.network_problem;
  EXPECT_TRUE(c.egress_declared);
  EXPECT_FALSE(c.network_off);
}

}  // namespace
}  // namespace skillmcp
