// The worker protocol (shared/worker_protocol.h) both ways: the run description and the
// worker report roundtrip; the encoder refuses what the decoder would refuse; every kind
// of malformed input is refused by the decoder.
#include "shared/worker_protocol.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>

#include "shared/run_limits_default.h"

namespace skillmcp {
namespace {

// Encode then decode: nullopt when either side refuses.
std::optional<RunSpec> Roundtrip(const RunSpec& s) {
  std::optional<std::string> bytes = EncodeRunSpec(s);
  if (!bytes) return std::nullopt;
  std::optional<RunSpec> d = DecodeRunSpec(*bytes);
  EXPECT_TRUE(d.has_value()) << "the decoder refused what the encoder produced";
  return d;
}

std::string Bytes(const RunSpec& s) {
  std::optional<std::string> bytes = EncodeRunSpec(s);
  EXPECT_TRUE(bytes.has_value());
  return bytes.value_or("");
}

RunSpec Sample() {
  RunSpec s;
  s.script_path = "/srv/skills/demo/scripts/main.js";
  s.args = {"--eval=x", "with space", "", "ünïcode"};
  s.envp = {"PATH=/usr/bin:/bin", "HOME=/var/empty", "EMPTY=", "EQ=a=b"};
  s.switch_ids = true;
  s.uid = 64000;
  s.gid = 64001;
  s.limits = kDefaultRunLimits;
  s.seccomp = true;
  s.seccomp_bpf = std::string(16, '\x06');  // two records; the decoder checks sizes only
  return s;
}

void ExpectSame(const RunSpec& a, const RunSpec& b) {
  EXPECT_EQ(a.probe, b.probe);
  EXPECT_EQ(a.script_path, b.script_path);
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.envp, b.envp);
  EXPECT_EQ(a.switch_ids, b.switch_ids);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.seccomp, b.seccomp);
  EXPECT_EQ(a.seccomp_bpf, b.seccomp_bpf);
  EXPECT_EQ(a.mirror_bpf, b.mirror_bpf);
  EXPECT_EQ(a.limits.nproc, b.limits.nproc);
  EXPECT_EQ(a.limits.address_space, b.limits.address_space);
  EXPECT_EQ(a.limits.data, b.limits.data);
  EXPECT_EQ(a.limits.cpu_seconds, b.limits.cpu_seconds);
  EXPECT_EQ(a.limits.fsize, b.limits.fsize);
  EXPECT_EQ(a.limits.nofile, b.limits.nofile);
  EXPECT_EQ(a.landlock_abi, b.landlock_abi);
  EXPECT_EQ(a.network_off, b.network_off);
  EXPECT_EQ(a.scratch_dir_path, b.scratch_dir_path);
  EXPECT_EQ(a.data_dir_path, b.data_dir_path);
  EXPECT_EQ(a.node_dir_path, b.node_dir_path);
  EXPECT_EQ(a.read_dirs, b.read_dirs);
  EXPECT_EQ(a.interpreter, b.interpreter);
  EXPECT_EQ(a.interpreter_path, b.interpreter_path);
  EXPECT_EQ(a.egress_declared, b.egress_declared);
  EXPECT_EQ(a.egress_rules, b.egress_rules);
}

TEST(RunSpec, Roundtrip) {
  const RunSpec s = Sample();
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
}

// python3 carries its pinned real path (its argv[0]); node and a probe carry none.
TEST(RunSpec, TheInterpreterKindAndPath) {
  RunSpec s = Sample();
  s.interpreter = InterpreterKind::kPython3;
  s.interpreter_path = "/usr/bin/python3.11";
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
  for (const char* bad : {"", "python3", "/usr/bin/../bin/python3", "/usr//bin/python3"}) {
    s.interpreter_path = bad;
    EXPECT_FALSE(EncodeRunSpec(s).has_value()) << bad;
  }
  RunSpec node = Sample();
  node.interpreter_path = "/usr/bin/node";
  EXPECT_FALSE(EncodeRunSpec(node).has_value());
  RunSpec probe;
  probe.probe = true;
  probe.seccomp = false;
  probe.interpreter = InterpreterKind::kPython3;
  probe.interpreter_path = "/usr/bin/python3.11";
  EXPECT_FALSE(EncodeRunSpec(probe).has_value());
  // A kind the worker does not know, patched into valid bytes, is refused.
  s.interpreter_path = "/usr/bin/python3.11";
  std::string bytes = *EncodeRunSpec(s);
  // ... u8 kind | str interpreter_path | u8 egress_declared | u32 0 rules | str mirror_bpf
  const size_t kind_at = bytes.size() - 4 - (1 + 4) - 4 - s.interpreter_path.size() - 1;
  ASSERT_EQ(bytes[kind_at], 1);
  bytes[kind_at] = 2;
  EXPECT_FALSE(DecodeRunSpec(bytes).has_value());
}

TEST(RunSpec, RoundtripProbe) {
  RunSpec s;
  s.probe = true;
  s.seccomp = false;
  s.switch_ids = true;
  s.uid = 64000;
  s.gid = 64000;
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
}

TEST(RunSpec, AProbeCarriesNothingToRun) {
  RunSpec s;
  s.probe = true;
  s.seccomp = false;
  for (auto add : {+[](RunSpec& x) { x.script_path = "/a.js"; },
                   +[](RunSpec& x) { x.args = {"a"}; }, +[](RunSpec& x) { x.envp = {"A=b"}; },
                   +[](RunSpec& x) {
                     x.seccomp = true;
                     x.seccomp_bpf = std::string(8, '\x06');
                   }}) {
    RunSpec bad = s;
    add(bad);
    EXPECT_FALSE(EncodeRunSpec(bad).has_value());
  }
}

// The decoder on its own: bytes the encoder never writes, made by patching a valid
// encoding, are refused all the same.
TEST(RunSpec, TheDecoderRefusesWhatTheEncoderWouldRefuse) {
  RunSpec s = Sample();
  s.args = {"aXb"};
  std::string bytes = Bytes(s);
  ASSERT_TRUE(DecodeRunSpec(bytes).has_value());
  std::string nul = bytes;
  nul[nul.find("aXb") + 1] = '\0';  // a NUL inside an argument
  EXPECT_FALSE(DecodeRunSpec(nul).has_value());
  std::string rel = bytes;
  rel[rel.find("/srv/skills")] = 's';  // a relative script path
  EXPECT_FALSE(DecodeRunSpec(rel).has_value());
  std::string dup = Bytes(Sample());
  dup.replace(dup.find("HOME=/var/empty"), 5, "PATH=");  // a name twice
  EXPECT_FALSE(DecodeRunSpec(dup).has_value());
  std::string version = bytes;
  version[4] = static_cast<char>(kWorkerProtocolVersion - 1);  // an older worker's format
  EXPECT_FALSE(DecodeRunSpec(version).has_value());
}

TEST(RunSpec, TheEncoderRefusesInsteadOfTruncating) {
  RunSpec s = Sample();
  s.args = {std::string(kRunSpecMaxBytes, 'a')};
  EXPECT_TRUE(IsValidRunSpec(s));
  EXPECT_FALSE(EncodeRunSpec(s).has_value()) << "over kRunSpecMaxBytes";
  s.args = {std::string("a\0b", 3)};
  EXPECT_FALSE(EncodeRunSpec(s).has_value()) << "a NUL in an argument";
}

RunSpec LandlockSample() {
  RunSpec s = Sample();
  s.landlock_abi = 6;
  s.network_off = true;
  s.scratch_dir_path = "/tmp/skill-mcp-run.Ab12Cd";
  s.data_dir_path = "/srv/data";
  s.node_dir_path = "/opt/node";
  s.read_dirs = {{"/srv/node_modules", 2049, 131073},
                 {"/srv/skills/node_modules", 0xfd00000001ULL, 0xffffffffffffffffULL}};
  return s;
}

TEST(RunSpec, RoundtripLandlock) {
  const RunSpec s = LandlockSample();
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
}

TEST(RunSpec, LandlockFieldsAreChecked) {
  for (auto change : {
           +[](RunSpec& x) { x.landlock_abi = kRunSpecMaxLandlockAbi + 1; },
           +[](RunSpec& x) { x.landlock_abi = 3; },  // network_off needs ABI 4
           +[](RunSpec& x) { x.scratch_dir_path = "tmp/x"; },
           +[](RunSpec& x) { x.data_dir_path = "data"; },
           // Not normalised: the worker compares these paths (shared/path_prefix.h).
           +[](RunSpec& x) { x.data_dir_path = "/usr/local/"; },
           +[](RunSpec& x) { x.data_dir_path = "/usr//local"; },
           +[](RunSpec& x) { x.data_dir_path = "/usr/local/etc/skill-mcp/.."; },
           +[](RunSpec& x) { x.scratch_dir_path = "/tmp/./skill-mcp-run.x"; },
           +[](RunSpec& x) { x.node_dir_path = "/usr/"; },
           +[](RunSpec& x) { x.node_dir_path = std::string("/opt\0x", 7); },
           +[](RunSpec& x) {
             x.read_dirs = {{"node_modules", 1, 2}};
           },
           +[](RunSpec& x) {
             x.read_dirs = {{"", 1, 2}};
           },
           +[](RunSpec& x) {
             x.read_dirs.assign(kRunSpecMaxReadDirs + 1, {"/m", 1, 2});
           },
           // No identity: the worker could not tell the checked directory from another.
           +[](RunSpec& x) {
             x.read_dirs = {{"/srv/node_modules", 2049, 0}};
           },
           // Landlock off: no rules that would not be applied.
           +[](RunSpec& x) { x.landlock_abi = 0; },
       }) {
    RunSpec bad = LandlockSample();
    change(bad);
    EXPECT_FALSE(IsValidRunSpec(bad));
    EXPECT_FALSE(EncodeRunSpec(bad).has_value());
  }
  RunSpec off = Sample();
  off.scratch_dir_path = "/tmp/skill-mcp-run.x";  // a TMPDIR without Landlock is fine
  EXPECT_TRUE(Roundtrip(off).has_value());
  off.network_off = true;  // TCP cannot be refused without Landlock: refused
  EXPECT_FALSE(EncodeRunSpec(off).has_value());
  // The node_modules directories without Landlock: only for the namespaced view's binds.
  RunSpec modules = Sample();
  modules.read_dirs = {{"/srv/node_modules", 2049, 131073}};
  EXPECT_FALSE(EncodeRunSpec(modules).has_value()) << "no Landlock, no namespaces";
  modules.namespaces = true;
  modules.skill_dir_path = "/srv/skills/a";
  modules.hidden_roots = {"/srv/skills"};
  ASSERT_TRUE(Roundtrip(modules).has_value()) << "bound back into the run's view";
  ExpectSame(modules, *Roundtrip(modules));
  RunSpec probe;
  probe.probe = true;
  probe.seccomp = false;
  probe.scratch_dir_path = "/tmp/x";
  EXPECT_FALSE(EncodeRunSpec(probe).has_value()) << "a probe has no scratch directory";
}

TEST(RunSpec, TheDecoderRefusesAPatchedLandlockPart) {
  std::string bytes = Bytes(LandlockSample());
  std::string rel = bytes;
  rel[rel.find("/srv/data")] = 's';
  EXPECT_FALSE(DecodeRunSpec(rel).has_value());
  std::string flag = bytes;
  flag[flag.find("/tmp/skill-mcp-run") - 5] = 2;  // network_off neither 0 nor 1
  EXPECT_FALSE(DecodeRunSpec(flag).has_value());
}

// Each module directory travels with the device and inode the broker checked, exactly;
// a description cut inside them, or with an inode of 0, is refused.
TEST(RunSpec, ModuleDirsCarryTheirIdentity) {
  const RunSpec s = LandlockSample();
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->read_dirs.size(), 2u);
  EXPECT_EQ(d->read_dirs[0].dev, 2049u);
  EXPECT_EQ(d->read_dirs[0].ino, 131073u);
  EXPECT_EQ(d->read_dirs[1].dev, 0xfd00000001ULL);
  EXPECT_EQ(d->read_dirs[1].ino, 0xffffffffffffffffULL);
  const std::string bytes = Bytes(s);
  // The last directory's inode is the 8 bytes before fresh_proc, the interpreter (node:
  // its kind and an empty path), egress_declared, the egress rules' count (none) and an
  // empty mirror_bpf.
  constexpr size_t kTail = 1 + (1 + 4) + (1 + 4) + 4;
  const size_t ino_at = bytes.size() - kTail - 8;
  EXPECT_EQ(bytes.substr(ino_at, 8), std::string(8, '\xff'));
  std::string zero = bytes;
  zero.replace(ino_at, 8, std::string(8, '\0'));
  EXPECT_FALSE(DecodeRunSpec(zero).has_value()) << "inode 0";
  std::string cut = bytes.substr(0, ino_at + 4) + bytes.substr(bytes.size() - kTail);
  EXPECT_FALSE(DecodeRunSpec(cut).has_value()) << "an inode cut short";
  // A count of directories the input cannot hold.
  const size_t count_at = bytes.find("/srv/node_modules") - 4 - 4;
  std::string many = bytes;
  many[count_at] = 40;
  EXPECT_FALSE(DecodeRunSpec(many).has_value());
  many[count_at] = static_cast<char>(kRunSpecMaxReadDirs + 1);
  EXPECT_FALSE(DecodeRunSpec(many).has_value());
}

// ---- the worker report (fd 4) --------------------------------------------------------

std::string Frame(WorkerStep step, int32_t err) {
  char out[kWorkerReportBytes];
  EXPECT_TRUE(EncodeWorkerReport({step, err}, out));
  return std::string(out, sizeof out);
}

TEST(WorkerReport, RoundtripsEveryStep) {
  for (int code = kWorkerStepFirst; code <= kWorkerStepLast; ++code) {
    std::optional<WorkerStep> step = WorkerStepFromCode(code);
    if (!step) continue;
    auto d = DecodeWorkerReport(Frame(*step, EACCES));
    ASSERT_TRUE(d.has_value()) << code;
    EXPECT_EQ(d->step, *step);
    EXPECT_EQ(d->err, EACCES);
  }
}

TEST(WorkerReport, TheEncoderRefusesWhatTheDecoderWould) {
  char out[kWorkerReportBytes];
  EXPECT_FALSE(EncodeWorkerReport({static_cast<WorkerStep>(199), 1}, out));
  EXPECT_FALSE(EncodeWorkerReport({static_cast<WorkerStep>(230), 1}, out));
  EXPECT_FALSE(EncodeWorkerReport({WorkerStep::kExec, -1}, out));
  EXPECT_FALSE(EncodeWorkerReport({WorkerStep::kExec, 4096}, out));
  EXPECT_TRUE(EncodeWorkerReport({WorkerStep::kExec, 4095}, out));
}

TEST(WorkerReport, TheDecoderIsStrict) {
  const std::string good = Frame(WorkerStep::kSetUid, EPERM);
  ASSERT_TRUE(DecodeWorkerReport(good).has_value());
  // The old raw struct (8 bytes), any cut, anything appended, a second frame.
  EXPECT_FALSE(DecodeWorkerReport(good.substr(8)).has_value());
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeWorkerReport(good.substr(0, n)).has_value()) << n;
  EXPECT_FALSE(DecodeWorkerReport(good + "x").has_value());
  EXPECT_FALSE(DecodeWorkerReport(good + good).has_value());
  // Each field out of its range: magic, version, step, errno.
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}, size_t{15}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    EXPECT_FALSE(DecodeWorkerReport(bad).has_value()) << "byte " << at;
  }
}

// ---- the run's end (fd 4) -------------------------------------------------------------

std::string EndFrame(int wait_status) {
  char out[kWorkerExitBytes];
  EXPECT_TRUE(EncodeWorkerExit(wait_status, out));
  return std::string(out, sizeof out);
}

int ExitStatus(int code) { return (code & 0xff) << 8; }

TEST(WorkerExitFrame, CarriesAnExitCodeOrASignalAsWaitidWould) {
  for (int code : {0, 1, 7, 224, 255}) {
    auto d = DecodeWorkerExit(EndFrame(ExitStatus(code)));
    ASSERT_TRUE(d.has_value()) << code;
    EXPECT_EQ(d->code, CLD_EXITED);
    EXPECT_EQ(d->value, code);
  }
  for (int sig : {SIGKILL, SIGTERM, SIGSEGV, 64}) {
    auto d = DecodeWorkerExit(EndFrame(sig));
    ASSERT_TRUE(d.has_value()) << sig;
    EXPECT_EQ(d->code, CLD_KILLED);
    EXPECT_EQ(d->value, sig);
  }
  auto dumped = DecodeWorkerExit(EndFrame(SIGSEGV | 0x80));
  ASSERT_TRUE(dumped.has_value());
  EXPECT_EQ(dumped->code, CLD_DUMPED);
  EXPECT_EQ(dumped->value, SIGSEGV);
}

TEST(WorkerExitFrame, TheEncoderRefusesWhatIsNotAnEnd) {
  char out[kWorkerExitBytes];
  EXPECT_FALSE(EncodeWorkerExit(0x137f, out)) << "stopped by SIGSTOP";
  EXPECT_FALSE(EncodeWorkerExit(0xffff, out)) << "continued";
}

TEST(WorkerExitFrame, TheDecoderIsStrict) {
  const std::string good = EndFrame(ExitStatus(3));
  ASSERT_TRUE(DecodeWorkerExit(good).has_value());
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeWorkerExit(good.substr(0, n)).has_value()) << n;
  EXPECT_FALSE(DecodeWorkerExit(good + "x").has_value());
  // Magic, version, code and value, each out of its range.
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}, size_t{13}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    EXPECT_FALSE(DecodeWorkerExit(bad).has_value()) << "byte " << at;
  }
  std::string exit256 = good;
  exit256[12] = 0;
  exit256[13] = 1;  // 256
  EXPECT_FALSE(DecodeWorkerExit(exit256).has_value());
  std::string signal0 = EndFrame(SIGKILL);
  signal0[12] = 0;
  EXPECT_FALSE(DecodeWorkerExit(signal0).has_value()) << "signal 0";
  signal0[12] = 65;
  EXPECT_FALSE(DecodeWorkerExit(signal0).has_value()) << "signal 65";
  // A report is not an end, nor an end a report.
  EXPECT_FALSE(DecodeWorkerExit(Frame(WorkerStep::kExec, ENOENT)).has_value());
  EXPECT_FALSE(DecodeWorkerReport(good).has_value());
}

TEST(WorkerFramesOnFd4, AreNothingAReportAnEndOrAReportThenAnEnd) {
  const std::string report = Frame(WorkerStep::kChdir, EACCES);
  const std::string end = EndFrame(ExitStatus(224));
  auto none = DecodeWorkerFrames("");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->report || none->exit);
  auto only_report = DecodeWorkerFrames(report);
  ASSERT_TRUE(only_report.has_value());
  EXPECT_TRUE(only_report->report && !only_report->exit);
  auto only_end = DecodeWorkerFrames(end);
  ASSERT_TRUE(only_end.has_value());
  EXPECT_TRUE(!only_end->report && only_end->exit);
  auto both = DecodeWorkerFrames(report + end);
  ASSERT_TRUE(both.has_value());
  ASSERT_TRUE(both->report && both->exit);
  EXPECT_EQ(both->report->step, WorkerStep::kChdir);
  EXPECT_EQ(both->exit->value, 224);
  // Nothing follows the end, and no second report.
  EXPECT_FALSE(DecodeWorkerFrames(end + report).has_value());
  EXPECT_FALSE(DecodeWorkerFrames(end + end).has_value());
  EXPECT_FALSE(DecodeWorkerFrames(report + report).has_value());
  EXPECT_FALSE(DecodeWorkerFrames(report + end + "x").has_value());
  EXPECT_FALSE(DecodeWorkerFrames(report + end.substr(0, 8)).has_value()) << "an end cut short";
  EXPECT_FALSE(DecodeWorkerFrames("x").has_value());
}

TEST(WorkerSteps, EveryCodeIsKnownAndTheyAreConsecutive) {
  // Every step, each code once, consecutive from kWorkerStepFirst; the codes are names, and
  // the order on each path is worker/main.cc's two lists (docs/run-description.md).
  const WorkerStep order[] = {
      WorkerStep::kSpawn,         WorkerStep::kReadSpec,     WorkerStep::kCheckFds,
      WorkerStep::kSetsid,        WorkerStep::kCloseFds,     WorkerStep::kSetLimits,
      WorkerStep::kSecurebits,    WorkerStep::kDropBounding, WorkerStep::kRefuseRootIds,
      WorkerStep::kSetGroups,     WorkerStep::kSetGid,       WorkerStep::kSetUid,
      WorkerStep::kUserNamespace, WorkerStep::kMountView,    WorkerStep::kPidNamespace,
      WorkerStep::kFork,          WorkerStep::kMountProc,    WorkerStep::kDropAmbient,
      WorkerStep::kDropCaps,      WorkerStep::kVerifyIds,    WorkerStep::kVerifyCaps,
      WorkerStep::kNoNewPrivs,    WorkerStep::kLandlock,     WorkerStep::kParentDeath,
      WorkerStep::kChdir,         WorkerStep::kSeccomp,      WorkerStep::kExec,
      WorkerStep::kReadOnlyView,  WorkerStep::kOwnNetwork,   WorkerStep::kMirrorSeccomp};
  int expected = kWorkerStepFirst;
  for (WorkerStep s : order) {
    EXPECT_EQ(static_cast<int>(s), expected);
    EXPECT_EQ(WorkerStepFromCode(expected++), s);
  }
  EXPECT_FALSE(WorkerStepFromCode(expected).has_value());
  EXPECT_FALSE(WorkerStepFromCode(0).has_value());
  EXPECT_FALSE(WorkerStepFromCode(137).has_value());
}

TEST(RunSpec, EveryTruncationIsRefused) {
  const std::string bytes = Bytes(Sample());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(DecodeRunSpec(std::string_view(bytes).substr(0, n)).has_value()) << n;
}

TEST(RunSpec, TrailingBytesAreRefused) {
  EXPECT_FALSE(DecodeRunSpec(Bytes(Sample()) + '\0').has_value());
  EXPECT_FALSE(DecodeRunSpec(Bytes(Sample()) + "x").has_value());
}

TEST(RunSpec, BadMagicVersionFlagsAndReservedAreRefused) {
  const std::string good = Bytes(Sample());
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}, size_t{9}, size_t{10}, size_t{11}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] + 2);  // probe 2, flag 2/3, ...
    EXPECT_FALSE(DecodeRunSpec(bad).has_value()) << "byte " << at;
  }
}

TEST(RunSpec, OversizedInputIsRefused) {
  RunSpec s = Sample();
  std::string big = Bytes(Sample());
  big.resize(kRunSpecMaxBytes + 1, 'a');
  EXPECT_FALSE(DecodeRunSpec(big).has_value());
}

TEST(RunSpec, TooManyStringsAreRefused) {
  RunSpec s = Sample();
  s.args.assign(kRunSpecMaxStrings, "a");  // plus 4 envp entries: over the cap
  EXPECT_FALSE(Roundtrip(s).has_value());
  s.args.resize(kRunSpecMaxStrings - s.envp.size());
  EXPECT_TRUE(Roundtrip(s).has_value());
}

TEST(RunSpec, CountsLargerThanTheInputAreRefusedWithoutAllocating) {
  std::string bytes = Bytes(Sample());
  // Hand-craft: argc = 200 with no strings behind it. Offset of argc: after the header
  // (4+4+4+8+48 = 68) and the script path string (4 + length).
  const size_t argc_at = 68 + 4 + Sample().script_path.size();
  std::string bad = bytes.substr(0, argc_at);
  bad += std::string("\xc8\x00\x00\x00", 4);
  EXPECT_FALSE(DecodeRunSpec(bad).has_value());
  // A string length past the end.
  std::string bad2 = bytes.substr(0, argc_at);
  bad2 += std::string("\x01\x00\x00\x00", 4) + std::string("\xff\xff\xff\x7f", 4) + "abc";
  EXPECT_FALSE(DecodeRunSpec(bad2).has_value());
}

TEST(RunSpec, NulInAnyStringIsRefused) {
  RunSpec a = Sample();
  a.args.push_back(std::string("a\0b", 3));
  EXPECT_FALSE(Roundtrip(a).has_value());
  RunSpec e = Sample();
  e.envp.push_back(std::string("A=b\0c", 5));
  EXPECT_FALSE(Roundtrip(e).has_value());
  RunSpec p = Sample();
  p.script_path = std::string("/x\0y", 4);
  EXPECT_FALSE(Roundtrip(p).has_value());
}

TEST(RunSpec, BadEnvEntriesAreRefused) {
  for (const char* bad : {"NOEQUALS", "=value", "1ABC=x", "A B=x", "A-B=x", "Ä=x", "A.B=x"}) {
    RunSpec s = Sample();
    s.envp.push_back(bad);
    EXPECT_FALSE(IsValidRunSpec(s)) << bad;
    EXPECT_FALSE(Roundtrip(s).has_value()) << bad;
  }
  for (const char* good : {"_=x", "a1=", "LONG_NAME_9=with=equals"}) {
    RunSpec s = Sample();
    s.envp.push_back(good);
    EXPECT_TRUE(Roundtrip(s).has_value()) << good;
  }
}

TEST(RunSpec, DuplicateEnvNamesAreRefused) {
  RunSpec s = Sample();
  s.envp.push_back("PATH=/evil");
  EXPECT_FALSE(Roundtrip(s).has_value());
}

// Seccomp on needs a program of whole 8-byte instructions within BPF_MAXINSNS; off
// needs none (a program that would not be loaded means the broker meant otherwise).
TEST(RunSpec, SeccompProgramSizeIsChecked) {
  for (size_t bad : {size_t{0}, size_t{7}, size_t{9}, kRunSpecMaxBpfBytes + 8}) {
    RunSpec s = Sample();
    s.seccomp_bpf.assign(bad, '\x06');
    EXPECT_FALSE(IsValidRunSpec(s)) << bad;
    EXPECT_FALSE(Roundtrip(s).has_value()) << bad;
  }
  for (size_t good : {size_t{8}, kRunSpecMaxBpfBytes}) {
    RunSpec s = Sample();
    s.seccomp_bpf.assign(good, '\x06');
    EXPECT_TRUE(Roundtrip(s).has_value()) << good;
  }
  RunSpec off = Sample();
  off.seccomp = false;
  EXPECT_FALSE(IsValidRunSpec(off)) << "seccomp off with a program";
  off.seccomp_bpf.clear();
  EXPECT_TRUE(IsValidRunSpec(off));
}

TEST(RunSpec, NamespacesNeedAnAbsoluteSkillPathAndNeverHideTheRoot) {
  RunSpec s = Sample();
  s.namespaces = true;
  s.skill_dir_path = "/srv/skills/weather";
  s.hidden_roots = {"/srv/skills", "/tmp/more"};
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->namespaces);
  EXPECT_EQ(d->skill_dir_path, s.skill_dir_path);
  EXPECT_EQ(d->hidden_roots, s.hidden_roots);
  for (auto bad : {std::vector<std::string>{"/"}, std::vector<std::string>{"relative"},
                   std::vector<std::string>{""}}) {
    RunSpec b = s;
    b.hidden_roots = bad;
    EXPECT_FALSE(Roundtrip(b).has_value()) << bad[0];
  }
  RunSpec rel = s;
  rel.skill_dir_path = "weather";
  EXPECT_FALSE(Roundtrip(rel).has_value());
  RunSpec many = s;
  many.hidden_roots.assign(kRunSpecMaxHiddenRoots + 1, "/srv/x");
  EXPECT_FALSE(Roundtrip(many).has_value());
  RunSpec off = s;  // a view that would not be built: the broker meant something else
  off.namespaces = false;
  EXPECT_FALSE(IsValidRunSpec(off));
}

// A fresh /proc belongs to the run's pid namespace: with namespaces, or in a probe.
TEST(RunSpec, FreshProcOnlyWithNamespacesOrInAProbe) {
  RunSpec s = Sample();
  s.namespaces = true;
  s.skill_dir_path = "/srv/skills/weather";
  s.fresh_proc = true;
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->fresh_proc);
  RunSpec plain = Sample();
  plain.fresh_proc = true;
  EXPECT_FALSE(IsValidRunSpec(plain));
  RunSpec probe;
  probe.probe = true;
  probe.seccomp = false;
  probe.fresh_proc = true;
  EXPECT_TRUE(Roundtrip(probe).has_value());
}

// The declared network mode: only with namespaces, hosts as the allowlist writes them, and
// ports sorted, distinct and never 0.
RunSpec EgressSample() {
  RunSpec s = Sample();
  s.namespaces = true;
  s.skill_dir_path = "/srv/skills/weather";
  s.egress_declared = true;
  s.egress_rules = {{"api.example.com", {80, 443}}, {"*.cdn.net", {8443}}, {"10.0.0.1", {443}}};
  s.mirror_bpf = std::string(24, '\x06');  // three records, told apart from seccomp_bpf's two
  return s;
}

TEST(RunSpec, EgressRulesRoundTrip) {
  const RunSpec s = EgressSample();
  auto d = Roundtrip(s);
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
  RunSpec none = EgressSample();
  none.egress_rules.clear();  // a skill that declares nothing reaches nothing
  EXPECT_TRUE(Roundtrip(none).has_value());
}

TEST(RunSpec, EgressOnlyWithNamespacesAndWellFormedRules) {
  RunSpec s = EgressSample();
  s.namespaces = false;
  s.skill_dir_path.clear();
  EXPECT_FALSE(IsValidRunSpec(s));
  s = EgressSample();
  s.egress_declared = false;  // rules that would not be used
  EXPECT_FALSE(IsValidRunSpec(s));
  for (auto bad : std::vector<EgressRule>{{"API.example.com", {443}},
                                          {"api.example.com.", {443}},
                                          {"*", {443}},
                                          {"a..b", {443}},
                                          {"api.example.com", {}},
                                          {"api.example.com", {0}},
                                          {"api.example.com", {443, 80}},
                                          {"api.example.com", {443, 443}}}) {
    RunSpec r = EgressSample();
    r.egress_rules = {bad};
    EXPECT_FALSE(IsValidRunSpec(r)) << bad.host;
  }
  RunSpec many = EgressSample();
  many.egress_rules.assign(kRunSpecMaxEgressRules + 1, EgressRule{"a.com", {443}});
  EXPECT_FALSE(IsValidRunSpec(many));
  RunSpec ports = EgressSample();
  ports.egress_rules = {{"a.com", {}}};
  for (uint16_t p = 1; p <= kRunSpecMaxEgressPorts + 1; ++p)
    ports.egress_rules[0].ports.push_back(p);
  EXPECT_FALSE(IsValidRunSpec(ports));
}

TEST(RunSpec, TheDecoderRefusesPatchedEgressCounts) {
  RunSpec s = EgressSample();
  s.egress_rules = {{"a.com", {443}}};
  std::string bytes = Bytes(s);
  // ... u8 egress_declared | u32 1 | str "a.com" | u32 1 | u32 443 | str mirror_bpf
  bytes.resize(bytes.size() - 4 - s.mirror_bpf.size());
  const std::string mirror = Bytes(s).substr(bytes.size());
  const size_t port_at = bytes.size() - 4;
  std::string p = bytes;
  ASSERT_TRUE(DecodeRunSpec(p + mirror).has_value());
  p[port_at + 2] = 1;  // 443 + 65536
  EXPECT_FALSE(DecodeRunSpec(p + mirror).has_value());
  const size_t rules_at = bytes.size() - 4 - 4 - (4 + 5) - 4;
  std::string c = bytes;
  c[rules_at] = static_cast<char>(kRunSpecMaxEgressRules + 1);
  EXPECT_FALSE(DecodeRunSpec(c + mirror).has_value());
  std::string d = bytes;
  d[rules_at - 1] = 2;  // egress_declared neither 0 nor 1
  EXPECT_FALSE(DecodeRunSpec(d + mirror).has_value());
}

// The mirror's filter comes exactly with a declared run under seccomp: never a declared
// mirror unfiltered while seccomp is on, never a program that would not be loaded.
TEST(RunSpec, TheMirrorFilterComesExactlyWithADeclaredRunUnderSeccomp) {
  RunSpec s = EgressSample();
  ASSERT_TRUE(Roundtrip(s).has_value());
  RunSpec missing = s;
  missing.mirror_bpf.clear();
  EXPECT_FALSE(IsValidRunSpec(missing)) << "a declared mirror without its filter";
  RunSpec partial = s;
  partial.mirror_bpf.pop_back();  // not whole instructions
  EXPECT_FALSE(IsValidRunSpec(partial));
  RunSpec off = s;
  off.seccomp = false;
  off.seccomp_bpf.clear();
  EXPECT_FALSE(IsValidRunSpec(off)) << "a filter that would not be loaded";
  off.mirror_bpf.clear();
  EXPECT_TRUE(Roundtrip(off).has_value());
  RunSpec plain = Sample();
  plain.mirror_bpf = s.mirror_bpf;
  EXPECT_FALSE(IsValidRunSpec(plain)) << "a mirror filter outside the declared mode";
  const std::string bytes = Bytes(s);
  // The last byte of the mirror's program cut: its length no longer matches.
  EXPECT_FALSE(DecodeRunSpec(bytes.substr(0, bytes.size() - 1)).has_value());
}

TEST(RunSpec, AScriptNeedsAnAbsolutePath) {
  RunSpec rel = Sample();
  rel.script_path = "scripts/main.js";
  EXPECT_FALSE(Roundtrip(rel).has_value());
  RunSpec empty = Sample();
  empty.script_path.clear();
  EXPECT_FALSE(Roundtrip(empty).has_value());
}

// The cell a worker started ahead is told first: framed with its length, exact.
TEST(CellSpecCodec, RoundTripsFramedWithItsLength) {
  CellSpec cell;
  cell.switch_ids = true;
  cell.ids_ahead = true;
  cell.uid = 64000;
  cell.gid = 64001;
  const std::string frame = EncodeCellSpec(cell).value();
  ASSERT_GT(frame.size(), kCellSpecPrefixBytes);
  uint32_t len = 0;
  for (size_t i = 0; i < kCellSpecPrefixBytes; ++i)
    len |= uint32_t{static_cast<uint8_t>(frame[i])} << (8 * i);
  EXPECT_EQ(len, frame.size() - kCellSpecPrefixBytes);
  const auto back = DecodeCellSpec(frame.substr(kCellSpecPrefixBytes));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, cell);
}

TEST(CellSpecCodec, RefusesWhatIsNotExactlyACell) {
  const std::string payload = EncodeCellSpec(CellSpec{}).value().substr(kCellSpecPrefixBytes);
  ASSERT_TRUE(DecodeCellSpec(payload).has_value());
  EXPECT_FALSE(DecodeCellSpec(payload + "x").has_value());                          // trailing
  EXPECT_FALSE(DecodeCellSpec(payload.substr(0, payload.size() - 1)).has_value());  // short
  std::string version = payload;
  version[4] = static_cast<char>(version[4] + 1);
  EXPECT_FALSE(DecodeCellSpec(version).has_value());  // another protocol version
  std::string flag = payload;
  flag[8] = 2;  // switch_ids is 0 or 1
  EXPECT_FALSE(DecodeCellSpec(flag).has_value());
  std::string magic = payload;
  magic[2] = 'R';  // "SMRS": a run description is not a cell
  EXPECT_FALSE(DecodeCellSpec(magic).has_value());
}

// Ids ahead only for a broker that switches; without them no ids at all.
TEST(CellSpecCodec, IdsOnlyWhereTheyAreSwitchedAhead) {
  CellSpec ahead_without_switch;
  ahead_without_switch.ids_ahead = true;
  EXPECT_FALSE(IsValidCellSpec(ahead_without_switch));
  EXPECT_FALSE(EncodeCellSpec(ahead_without_switch).has_value());
  CellSpec unused_ids;
  unused_ids.switch_ids = true;
  unused_ids.uid = 64000;
  EXPECT_FALSE(IsValidCellSpec(unused_ids));
  EXPECT_FALSE(EncodeCellSpec(unused_ids).has_value());
  // The decoder refuses them too: the same bytes with the flag and ids set by hand.
  std::string payload = EncodeCellSpec(CellSpec{}).value().substr(kCellSpecPrefixBytes);
  payload[9] = 1;  // ids_ahead without switch_ids
  EXPECT_FALSE(DecodeCellSpec(payload).has_value());
  payload[9] = 0;
  payload[8] = 1;   // switch_ids
  payload[10] = 1;  // uid 1, not ahead
  EXPECT_FALSE(DecodeCellSpec(payload).has_value());
}

TEST(CellSpecCodec, ADescriptionMatchesTheCellItWasTakenFrom) {
  RunSpec spec;
  spec.switch_ids = true;
  spec.uid = 1234;
  spec.gid = 5678;
  spec.limits.nofile = 64;
  const CellSpec cell = CellOf(spec);
  EXPECT_TRUE(cell.switch_ids && cell.ids_ahead);
  EXPECT_EQ(cell.uid, 1234u);
  EXPECT_EQ(cell.gid, 5678u);
  EXPECT_TRUE(CellMatches(cell, spec));
  RunSpec other = spec;
  other.limits.nproc = 1;  // limits are the run's, applied after it is read
  EXPECT_TRUE(CellMatches(cell, other));
  other = spec;
  other.uid = 1235;
  EXPECT_FALSE(CellMatches(cell, other));
  other = spec;
  other.gid = 5679;
  EXPECT_FALSE(CellMatches(cell, other));
  other = spec;
  other.switch_ids = false;
  EXPECT_FALSE(CellMatches(cell, other));
  other = spec;
  other.probe = true;  // a probe is a whole description of its own, never after a cell
  EXPECT_FALSE(CellMatches(cell, other));
  // The run-as uid, or a run's own from a small range, comes with the description: a
  // cell without ids ahead matches any, for a broker that switches.
  CellSpec later;
  later.switch_ids = true;
  other = spec;
  other.uid = 1879048200;
  EXPECT_TRUE(CellMatches(later, other));
  other.switch_ids = false;
  EXPECT_FALSE(CellMatches(later, other));
}

// A cell for a worker that waits with a uid of its own, and the same cell after its
// frame's payload went through the decoder.
CellSpec OwnUidCell() {
  CellSpec cell;
  cell.switch_ids = true;
  cell.ids_ahead = true;
  cell.uid = 1879048200;
  cell.gid = 64000;
  return cell;
}

std::optional<CellSpec> CellRoundtrip(const CellSpec& cell) {
  return DecodeCellSpec(EncodeCellSpec(cell).value().substr(kCellSpecPrefixBytes));
}

// The same cell for a worker under the shared run-as uid, switched after the description.
CellSpec UnderTheSharedUid(CellSpec cell) {
  cell.ids_ahead = false;
  cell.uid = cell.gid = 0;
  return cell;
}

// Neither side takes it: IsValidCellSpec refuses it, and it is never encoded.
bool RefusedCell(const CellSpec& cell) {
  return !IsValidCellSpec(cell) && !EncodeCellSpec(cell).has_value();
}

// A run of a uid of its own (OwnUidCell's).
RunSpec OwnUidRun() {
  RunSpec spec;
  spec.switch_ids = true;
  spec.uid = 1879048200;
  spec.gid = 64000;
  return spec;
}

// The view ahead: its roots travel with the cell, only where the worker already has the
// run's identity (a uid of its own, or no switch).
TEST(CellSpecCodec, TheViewAheadCarriesItsRootsAndOnlyWithTheRunsIdentity) {
  CellSpec cell = OwnUidCell();
  cell.view_ahead = true;
  cell.hidden_roots = {"/srv/skills", "/home/ann/skills"};
  const auto back = CellRoundtrip(cell);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, cell);
  CellSpec unswitched;
  unswitched.view_ahead = true;
  unswitched.hidden_roots = {"/srv/skills"};
  EXPECT_TRUE(IsValidCellSpec(unswitched));
  // The shared run-as uid is switched to after the description: its view follows it.
  EXPECT_TRUE(RefusedCell(UnderTheSharedUid(cell)));
  CellSpec roots_without_view = cell;
  roots_without_view.view_ahead = false;
  EXPECT_FALSE(IsValidCellSpec(roots_without_view));
  for (const char* bad : {"/", "srv/skills", "", "/srv/./skills", "//srv", "/srv/skills/"}) {
    CellSpec c = cell;
    c.hidden_roots.push_back(bad);
    EXPECT_FALSE(IsValidCellSpec(c)) << bad;
  }
  CellSpec many = cell;
  many.hidden_roots.assign(kRunSpecMaxHiddenRoots + 1, "/srv/skills");
  EXPECT_FALSE(IsValidCellSpec(many));
  // A cell the worker's bound would refuse is never encoded.
  CellSpec long_roots = cell;
  long_roots.hidden_roots.assign(2, "/" + std::string(kCellSpecMaxBytes / 2, 'r'));
  EXPECT_TRUE(IsValidCellSpec(long_roots));
  EXPECT_FALSE(EncodeCellSpec(long_roots).has_value());
}

// The Landlock ruleset ahead: its three values travel with the cell, only where the
// worker already has the run's identity, each checked as in a run description.
TEST(CellSpecCodec, TheLandlockRulesAheadOnlyWithTheRunsIdentityAndValidValues) {
  CellSpec cell = OwnUidCell();
  cell.landlock_ahead = true;
  cell.landlock_abi = 6;
  cell.network_off = true;
  cell.node_dir_path = "/usr/bin";
  const auto back = CellRoundtrip(cell);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, cell);
  CellSpec unswitched;
  unswitched.landlock_ahead = true;
  unswitched.landlock_abi = 1;
  EXPECT_TRUE(IsValidCellSpec(unswitched));  // no node directory: no rule for it
  // why: under the shared run-as uid each path would be opened as the broker.
  EXPECT_TRUE(RefusedCell(UnderTheSharedUid(cell)));
  CellSpec no_abi = cell;
  no_abi.landlock_abi = 0;
  EXPECT_FALSE(IsValidCellSpec(no_abi));
  CellSpec unknown_abi = cell;
  unknown_abi.landlock_abi = kRunSpecMaxLandlockAbi + 1;
  EXPECT_FALSE(IsValidCellSpec(unknown_abi));
  CellSpec network_abi3 = cell;
  network_abi3.landlock_abi = 3;
  EXPECT_FALSE(IsValidCellSpec(network_abi3));  // refusing TCP needs ABI 4
  network_abi3.network_off = false;
  EXPECT_TRUE(IsValidCellSpec(network_abi3));
  for (const char* bad : {"usr/bin", "/usr/./bin", "//usr", "/usr/bin/"}) {
    CellSpec c = cell;
    c.node_dir_path = bad;
    EXPECT_FALSE(IsValidCellSpec(c)) << bad;
  }
  // Without landlock_ahead its values are unset: nothing hides in them.
  CellSpec values_without = cell;
  values_without.landlock_ahead = false;
  EXPECT_FALSE(IsValidCellSpec(values_without));
  values_without.landlock_abi = 0;
  values_without.network_off = false;
  EXPECT_FALSE(IsValidCellSpec(values_without));
  values_without.node_dir_path.clear();
  EXPECT_TRUE(IsValidCellSpec(values_without));
  CellSpec only_network = values_without;
  only_network.network_off = true;
  EXPECT_TRUE(RefusedCell(only_network));
}

TEST(CellSpecCodec, ARunMatchesTheLandlockRulesAheadOnlyWithTheSameValues) {
  RunSpec spec = OwnUidRun();
  spec.landlock_abi = 6;
  spec.network_off = true;
  spec.node_dir_path = "/usr/bin";
  CellSpec cell = CellOf(spec);
  EXPECT_FALSE(cell.landlock_ahead);  // a whole description: nothing waited
  cell.landlock_ahead = true;
  cell.landlock_abi = 6;
  cell.network_off = true;
  cell.node_dir_path = "/usr/bin";
  EXPECT_TRUE(CellMatches(cell, spec));
  // Each of the three values otherwise than the cell's.
  for (int value = 0; value < 3; ++value) {
    RunSpec other = spec;
    if (value == 0) other.landlock_abi = 5;
    if (value == 1) other.network_off = false;
    if (value == 2) other.node_dir_path = "/opt/node/bin";
    EXPECT_FALSE(CellMatches(cell, other)) << value;
  }
  // why: a namespaced run's rules must have been looked up in its own view.
  RunSpec other = spec;
  other.namespaces = true;
  other.skill_dir_path = "/srv/skills/a";
  other.hidden_roots = {"/srv/skills"};
  EXPECT_FALSE(CellMatches(cell, other));
  cell.view_ahead = true;
  cell.hidden_roots = other.hidden_roots;
  EXPECT_TRUE(CellMatches(cell, other));
}

TEST(CellSpecCodec, ARunMatchesAViewAheadOnlyWithNamespacesAndTheSameRoots) {
  RunSpec spec = OwnUidRun();
  spec.namespaces = true;
  spec.skill_dir_path = "/srv/skills/a";
  spec.hidden_roots = {"/srv/skills"};
  const CellSpec cell = CellOf(spec);
  EXPECT_TRUE(cell.view_ahead);
  EXPECT_EQ(cell.hidden_roots, spec.hidden_roots);
  EXPECT_TRUE(CellMatches(cell, spec));
  RunSpec other = spec;
  other.namespaces = false;
  other.skill_dir_path.clear();
  other.hidden_roots.clear();
  EXPECT_FALSE(CellMatches(cell, other));  // a run without the view built for it
  other = spec;
  other.hidden_roots = {"/srv/skills", "/opt/skills"};
  EXPECT_FALSE(CellMatches(cell, other));  // another skill would stay visible
  other = spec;
  other.skill_dir_path = "/srv/skills/b";  // the run's own directory comes after the cell
  EXPECT_TRUE(CellMatches(cell, other));
  // Without the view ahead, a run builds its view after the description, whatever roots.
  CellSpec later = cell;
  later.view_ahead = false;
  later.hidden_roots.clear();
  EXPECT_TRUE(CellMatches(later, other));
  RunSpec probe;
  probe.probe = true;
  probe.namespaces = true;
  EXPECT_FALSE(CellOf(probe).view_ahead);  // a probe builds its own parts
}

// The declared network mode's namespace ahead travels with the cell, only with the view
// ahead, whose user namespace owns it.
TEST(CellSpecCodec, TheNetworkAheadOnlyWithTheViewAhead) {
  CellSpec cell = OwnUidCell();
  cell.view_ahead = true;
  cell.hidden_roots = {"/srv/skills"};
  cell.network_ahead = true;
  const auto back = CellRoundtrip(cell);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, cell);
  EXPECT_TRUE(back->network_ahead);
  CellSpec unswitched;
  unswitched.view_ahead = true;
  unswitched.network_ahead = true;
  EXPECT_TRUE(IsValidCellSpec(unswitched));
  CellSpec without_view = cell;
  without_view.view_ahead = false;
  without_view.hidden_roots.clear();
  EXPECT_TRUE(RefusedCell(without_view));
  // The decoder refuses it too: the view's flag cleared by hand in a valid frame.
  CellSpec plain;
  plain.view_ahead = true;
  plain.network_ahead = true;
  std::string payload = EncodeCellSpec(plain).value().substr(kCellSpecPrefixBytes);
  const size_t view_at = 4 + 4 + 2 + 8;       // magic, version, two flags, uid and gid
  const size_t network_at = view_at + 1 + 4;  // after the view's flag and its 0 roots
  ASSERT_EQ(payload[view_at], 1);
  ASSERT_EQ(payload[network_at], 1);
  ASSERT_TRUE(DecodeCellSpec(payload).has_value());
  payload[view_at] = 0;
  EXPECT_FALSE(DecodeCellSpec(payload).has_value());
  payload[view_at] = 1;
  payload[network_at] = 2;  // a flag is 0 or 1
  EXPECT_FALSE(DecodeCellSpec(payload).has_value());
}

// A cell with the view ahead takes a run in the declared network mode exactly when it
// made the network ahead; without the view ahead, the run makes all of it.
TEST(CellSpecCodec, ARunMatchesTheNetworkAheadExactlyInTheDeclaredMode) {
  RunSpec spec = OwnUidRun();
  spec.namespaces = true;
  spec.skill_dir_path = "/srv/skills/a";
  spec.hidden_roots = {"/srv/skills"};
  spec.egress_declared = true;
  spec.egress_rules = {{"api.example.com", {443}}};
  const CellSpec cell = CellOf(spec);
  EXPECT_TRUE(cell.view_ahead);
  EXPECT_TRUE(cell.network_ahead);
  EXPECT_TRUE(CellMatches(cell, spec));
  RunSpec other = spec;
  other.egress_rules = {{"other.example.org", {80, 8080}}};  // the rules come with the run
  EXPECT_TRUE(CellMatches(cell, other));
  // why: a run of another mode would start in a network it did not ask for.
  other = spec;
  other.egress_declared = false;
  other.egress_rules.clear();
  EXPECT_FALSE(CellMatches(cell, other));
  CellSpec no_network = cell;
  no_network.network_ahead = false;
  EXPECT_TRUE(CellMatches(no_network, other));
  // why: a declared run after a view made ahead without the network was described for
  // another cell.
  EXPECT_FALSE(CellMatches(no_network, spec));
  // Without the view ahead nothing of the network was made: a run of either mode.
  CellSpec later = UnderTheSharedUid(cell);
  later.view_ahead = false;
  later.hidden_roots.clear();
  later.network_ahead = false;
  EXPECT_TRUE(CellMatches(later, spec));
  EXPECT_TRUE(CellMatches(later, other));
  RunSpec without_namespaces = OwnUidRun();
  EXPECT_FALSE(CellOf(without_namespaces).network_ahead);
  RunSpec probe;
  probe.probe = true;
  probe.namespaces = true;
  probe.egress_declared = true;
  EXPECT_FALSE(CellOf(probe).network_ahead);  // a probe takes its own steps
}

}  // namespace
}  // namespace skillmcp

// The fuzz corpus (tests/fuzz/corpus/run_spec) replayed as an ordinary test, with the
// fuzz target's invariants: accepted means valid and canonical.
#include <map>
#include <set>

#include "tests/unit/fuzz_corpus.h"

namespace skillmcp {
namespace {

TEST(RunSpecCorpus, ReplaysWithTheFuzzInvariants) {
  const std::map<std::string, std::string> files = ReadFuzzCorpus("run_spec");
  std::set<std::string> accepted;
  for (const auto& [name, bytes] : files) {
    const auto spec = DecodeRunSpec(bytes);
    if (!spec) continue;
    accepted.insert(name);
    EXPECT_TRUE(IsValidRunSpec(*spec)) << name;
    EXPECT_EQ(EncodeRunSpec(*spec).value_or(""), bytes) << name;
  }
  EXPECT_GE(files.size(), 10u);
  EXPECT_EQ(accepted, (std::set<std::string>{"egress-declared", "landlock", "minimal",
                                             "node-script", "probe", "python-script"}));
}

// The same corpus through the cell decoder: only the valid cell files are cells, and each
// re-encodes to its frame's payload.
TEST(RunSpecCorpus, OnlyTheCellFilesDecodeAsCells) {
  std::set<std::string> accepted;
  for (const auto& [name, bytes] : ReadFuzzCorpus("run_spec")) {
    const auto cell = DecodeCellSpec(bytes);
    if (!cell) continue;
    accepted.insert(name);
    EXPECT_EQ(EncodeCellSpec(*cell).value_or("").substr(kCellSpecPrefixBytes), bytes) << name;
  }
  EXPECT_EQ(accepted,
            (std::set<std::string>{"cell", "cell-landlock", "cell-network", "cell-view"}));
}

// The worker_report corpus (tests/fuzz/corpus/worker_report) carries the protocol's
// version: the seeds named for a real frame must decode as one, or the replay exercises
// nothing but refusals.
TEST(WorkerReportCorpus, TheSeedsOfRealFramesDecode) {
  std::set<std::string> accepted;
  for (const auto& [name, bytes] : ReadFuzzCorpus("worker_report"))
    if (DecodeWorkerFrames(bytes)) accepted.insert(name);
  EXPECT_EQ(accepted,
            (std::set<std::string>{"empty", "end-exit-0", "end-killed-sigterm", "exec-eacces",
                                   "report-then-end", "setuid-eperm", "spawn-enoexec"}));
}

}  // namespace
}  // namespace skillmcp
