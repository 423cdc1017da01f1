#include "broker/harden/layers.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <cstdio>
#include <string>

#include "tests/unit/harden/child.h"
#include "tests/unit/harden/find_layer.h"

namespace skillmcp {
namespace {

using testing::Find;
using testing::InChild;

IsolationFacts GoodFacts() {
  IsolationFacts f;
  f.process = HardenProcess();
  f.scrub_attempted = true;
  f.scrub.ok = true;
  f.scrub.detail = "zeroed";
  f.privileges.uid = 4242;
  f.privileges.caps_reduced = true;
  f.worker.limits_configured = true;
  f.worker.limits_text = "nproc 64";
  f.worker.runs_possible = true;
  return f;
}

// Reported in every configuration, never on and never demanded: doctor's exit code does
// not depend on it, and its reason comes from the cgroup facts.
TEST(Layers, RunCgroupIsReportedOffWithTheCgroupReason) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              CgroupFacts cg;
              cg.v2_mounted = true;
              cg.v2_path = "/system.slice/x.service";
              f.cgroup = cg;
              auto layers = ComputeLayers(f);
              const Layer* l = Find(layers, "run-cgroup");
              if (!l || l->on || l->demanded || DoctorExitCode(layers) != 0) return 1;
              return l->reason == RunCgroupReason(cg) ? 0 : 2;
            }),
            0);
}

// nproc counts per real uid: the reason calls it a per-run bound only with run-identity on.
TEST(Layers, RunCgroupSaysNprocIsPerRunOnlyWithOwnUids) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.cgroup = CgroupFacts{};
              const auto shared_layers = ComputeLayers(f);
              const Layer* shared = Find(shared_layers, "run-cgroup");
              if (!shared) return 1;
              if (shared->reason.find("uid every run shares (run-identity off), so it bounds "
                                      "all runs together") == std::string::npos)
                return 2;
              if (shared->reason.find("run's own uid") != std::string::npos) return 3;
              f.worker.run_uids = "1879048192-1879113727";
              const auto own_layers = ComputeLayers(f);
              const Layer* own = Find(own_layers, "run-cgroup");
              if (!own) return 4;
              if (own->reason.find("processes of the run's own uid (run-identity on)") ==
                  std::string::npos)
                return 5;
              return own->reason.find("all runs together") == std::string::npos ? 0 : 6;
            }),
            0);
}

// Each case runs in a child: ComputeLayers re-reads the real dumpable flag and
// RLIMIT_CORE, which HardenProcess sets there.
TEST(Layers, AllDemandedOnGivesExitZero) {
  EXPECT_EQ(InChild([] {
              auto layers = ComputeLayers(GoodFacts());
              return DoctorExitCode(layers) == 0 && Find(layers, "broker-non-dumpable")->on ? 0 : 1;
            }),
            0);
}

// Off by default and not demanded; asked for, it is demanded, and a failed boot probe
// turns it off with the probe's reason and fails doctor.
TEST(Layers, RunNamespacesAreDemandedOnceAskedFor) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              auto off = ComputeLayers(f);
              const Layer* l = Find(off, "run-namespaces");
              if (!l || l->on || l->demanded || DoctorExitCode(off) != 0) return 1;
              f.worker.namespaces_configured = true;
              auto on = ComputeLayers(f);
              if (!Find(on, "run-namespaces")->on || DoctorExitCode(on) != 0) return 2;
              f.worker.namespaces_demanded = true;  // SKILL_MCP_NAMESPACES=on
              f.worker.namespaces_problem = "probe said EPERM";
              auto failed = ComputeLayers(f);
              l = Find(failed, "run-namespaces");
              if (l->on || !l->demanded || l->reason != "probe said EPERM") return 3;
              return DoctorExitCode(failed) == 1 ? 0 : 4;
            }),
            0);
}

// Landlock: on with its ABI; off with the reason, demanded only with SKILL_MCP_LANDLOCK=on.
TEST(Layers, Landlock) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.landlock_problem = "this kernel has no Landlock";
              auto off = ComputeLayers(f);
              const Layer* l = Find(off, "landlock");
              if (!l || l->on || l->demanded || l->reason != "this kernel has no Landlock") return 1;
              if (DoctorExitCode(off) != 0) return 2;
              f.worker.landlock_demanded = true;
              if (DoctorExitCode(ComputeLayers(f)) != 1) return 3;
              f.worker.landlock_abi = 3;
              auto on = ComputeLayers(f);
              l = Find(on, "landlock");
              if (!l->on || l->reason.rfind("Landlock ABI 3:", 0) != 0) return 4;
              if (l->reason.find("signals are not scoped") == std::string::npos) return 5;
              f.worker.landlock_abi = 6;
              auto six = ComputeLayers(f);
              return Find(six, "landlock")->reason.find("stay within the run") != std::string::npos
                         ? 0
                         : 9;
            }),
            0);
}

// The network layer: declared and off are on (off held by the seccomp fence or Landlock
// ABI 4, else demanded and failing doctor); on is off, and not demanded.
TEST(Layers, TheNetwork) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.network_mode = "on";
              auto host = ComputeLayers(f);
              const Layer* l = Find(host, "network");
              if (!l || l->on || l->demanded || DoctorExitCode(host) != 0) return 1;
              f.worker.network_mode = "declared";
              f.worker.egress_declared = true;
              auto declared = ComputeLayers(f);
              l = Find(declared, "network");
              if (!l->on || l->reason.rfind("SKILL_MCP_NETWORK=declared:", 0) != 0) return 2;
              // The mirror's own filter comes with the seccomp filter, and only with it.
              if (l->reason.find("mirror") == std::string::npos) return 8;
              f.worker.seccomp_configured = false;
              auto unfiltered = ComputeLayers(f);
              if (Find(unfiltered, "network")->reason.find("mirror") != std::string::npos) return 9;
              f.worker.seccomp_configured = true;
              f.worker.egress_declared = false;
              f.worker.network_off = true;
              f.worker.network_fallback = "runs get no namespaces here (x)";
              auto fallback = ComputeLayers(f);
              l = Find(fallback, "network");
              if (!l->on || l->reason.find("falls back to off") == std::string::npos) return 3;
              if (l->reason.find("seccomp refuses it") == std::string::npos) return 4;
              f.worker.network_seccomp = false;
              f.worker.landlock_abi = 3;
              auto neither = ComputeLayers(f);
              l = Find(neither, "network");
              if (l->on || !l->demanded || DoctorExitCode(neither) != 1) return 5;
              f.worker.landlock_abi = 4;
              auto landlock = ComputeLayers(f);
              l = Find(landlock, "network");
              if (!l->on || l->reason.find("Landlock refuses") == std::string::npos) return 6;
              return DoctorExitCode(landlock) == 0 ? 0 : 7;
            }),
            0);
}

// Own identity per run: on with the range and free count and the group runs keep; off with
// the reason; demanded only when SKILL_MCP_RUN_UIDS names a range.
TEST(Layers, RunIdentityOnWithItsRangeOffWithItsReason) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.run_uids_off_reason = "the broker cannot switch uids";
              auto off = ComputeLayers(f);
              const Layer* l = Find(off, "run-identity");
              if (!l || l->on || l->demanded || l->reason != "the broker cannot switch uids")
                return 1;
              if (DoctorExitCode(off) != 0) return 2;
              f.worker.run_uids_demanded = true;
              if (DoctorExitCode(ComputeLayers(f)) != 1) return 3;
              f.worker.run_uids = "70000-70009 (10 uids, 9 free now; locks in /s/run-uids)";
              f.worker.run_gid = 64000;
              auto on = ComputeLayers(f);
              l = Find(on, "run-identity");
              if (!l->on || DoctorExitCode(on) != 0) return 4;
              if (l->reason.find("from 70000-70009 (10 uids, 9 free now") == std::string::npos ||
                  l->reason.find("run-as group 64000") == std::string::npos ||
                  l->reason.find("warning") != std::string::npos)
                return 5;
              f.worker.run_uids_warning = "MCP_DATA_DIR cannot be written";
              auto warned = ComputeLayers(f);
              l = Find(warned, "run-identity");
              return l->reason.find("warning: MCP_DATA_DIR cannot be written") != std::string::npos
                         ? 0
                         : 6;
            }),
            0);
}

// The uid pool is host-wide only among brokers sharing a lock directory: doctor names it
// and says what the operator must do for the other brokers of the host.
TEST(Layers, RunIdentityNamesItsLockDirectory) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.run_uids = "70000-70009 (10 uids, 9 free now; locks in /srv/s/run-uids)";
              f.worker.run_uids_lock_dir = "/srv/s/run-uids";
              auto layers = ComputeLayers(f);
              const Layer* l = Find(layers, "run-identity");
              if (!l || !l->on) return 1;
              if (l->reason.find("the pool is shared only by brokers using /srv/s/run-uids: "
                                 "give every broker of this host the same "
                                 "SKILL_MCP_STATE_DIR or disjoint SKILL_MCP_RUN_UIDS") ==
                  std::string::npos)
                return 2;
              return 0;
            }),
            0);
}

// The spent-token record: on without a shared key or with a host-wide record; off (a
// warning, never a doctor failure) when the record lies in a private /tmp.
TEST(Layers, SpentTokensNotHostWideIsAWarning) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              auto plain = ComputeLayers(f);
              const Layer* l = Find(plain, "spent-tokens-host-wide");
              if (!l || !l->on || l->reason.find("no MCP_CONFIRM_SECRET") == std::string::npos)
                return 1;
              f.shared_tokens = true;
              f.spent_dir_path = "/var/lib/skill-mcp/spent-tokens";
              auto on = ComputeLayers(f);
              l = Find(on, "spent-tokens-host-wide");
              if (!l->on || l->reason.find("/var/lib/skill-mcp/spent-tokens") == std::string::npos)
                return 2;
              f.spent_dir_problem = "/tmp/s lies in this process's private /tmp";
              auto off = ComputeLayers(f);
              l = Find(off, "spent-tokens-host-wide");
              if (l->on || l->demanded || DoctorExitCode(off) != 0) return 3;
              return l->reason.find("not spent host-wide: /tmp/s lies") != std::string::npos ? 0 : 4;
            }),
            0);
}

// Auto's probe failure is off with its reason and never fails doctor; the
// fresh /proc and parent-death layers are reported with the namespaces.
TEST(Layers, AutoNamespacesFreshProcAndParentDeathAreReported) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.runs_possible = true;
              f.worker.namespaces_off_reason = "probe said EPERM; auto";
              auto off = ComputeLayers(f);
              const Layer* ns = Find(off, "run-namespaces");
              if (!ns || ns->on || ns->demanded || ns->reason != "probe said EPERM; auto") return 1;
              if (DoctorExitCode(off) != 0) return 2;
              const Layer* proc = Find(off, "fresh-proc");
              if (!proc || proc->on) return 3;
              const Layer* death = Find(off, "parent-death");
              if (!death || !death->on || death->reason.find("process group") == std::string::npos)
                return 4;
              f.worker.namespaces_off_reason.clear();
              f.worker.namespaces_configured = true;
              f.worker.fresh_proc_problem = "masked /proc";
              auto masked = ComputeLayers(f);
              if (Find(masked, "fresh-proc")->on || Find(masked, "fresh-proc")->reason != "masked /proc")
                return 5;
              if (Find(masked, "parent-death")->reason.find("pid namespace") == std::string::npos)
                return 6;
              f.worker.fresh_proc = true;
              return Find(ComputeLayers(f), "fresh-proc")->on ? 0 : 7;
            }),
            0);
}

TEST(Layers, DumpableIsReadFromTheKernelNotAssumed) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // undo behind the report's back
              auto layers = ComputeLayers(f);
              return !Find(layers, "broker-non-dumpable")->on && DoctorExitCode(layers) == 1 ? 0
                                                                                             : 1;
            }),
            0);
}

TEST(Layers, HostedWithoutScrubFailsUnlessAllowed) {
  EXPECT_EQ(
      InChild([] {
        IsolationFacts f = GoodFacts();
        f.hosted = true;
        f.scrub.ok = false;
        f.scrub.detail = "cannot zero";
        auto layers = ComputeLayers(f);
        if (DoctorExitCode(layers) != 1 || !Find(layers, "environ-wiped")->demanded) return 1;
        if (FormatDoctorReport(layers).find("required by this configuration") == std::string::npos)
          return 2;
        f.allow_unscrubbed = true;
        if (DoctorExitCode(ComputeLayers(f)) != 0) return 3;
        f.hosted = false;  // standalone: a warning, not a failure
        f.allow_unscrubbed = false;
        return DoctorExitCode(ComputeLayers(f)) == 0 ? 0 : 4;
      }),
      0);
}

TEST(Layers, RootThatCouldNotSwitchFails) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.privileges.started_as_root = true;
              f.privileges.switch_demanded = true;
              f.privileges.broker_switched = false;
              f.privileges.detail = "service identity: root is refused";
              auto layers = ComputeLayers(f);
              if (DoctorExitCode(layers) != 1) return 1;
              if (Find(layers, "capabilities-dropped")->on) return 2;
              return LayersOneLine(layers).find("capabilities-dropped (the broker is still root") !=
                             std::string::npos
                         ? 0
                         : 3;
            }),
            0);
}

TEST(Layers, OneLineAndReportNameEveryLayer) {
  EXPECT_EQ(InChild([] {
              IsolationFacts f = GoodFacts();
              f.worker.seccomp_configured = false;
              auto layers = ComputeLayers(f);
              std::string line = LayersOneLine(layers);
              std::string report = FormatDoctorReport(layers);
              for (const Layer& l : layers) {
                if (line.find(l.name) == std::string::npos) return 1;
                if (report.find(l.name + ": ") == std::string::npos) return 2;
              }
              if (Find(layers, "seccomp")->on) return 3;
              if (line.find("seccomp (the seccomp filter is turned off") == std::string::npos)
                return 4;
              FILE* out = tmpfile();
              int code = RunDoctor(f, out);
              long size = ftell(out);
              fclose(out);
              return code == 0 && size > 0 ? 0 : 5;
            }),
            0);
}

}  // namespace
}  // namespace skillmcp
