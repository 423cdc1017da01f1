// RunSpec encoding: roundtrip, and every kind of malformed input refused.
#include "shared/run_spec.h"

#include <gtest/gtest.h>

#include "shared/run_limits_default.h"

namespace skillmcp {
namespace {

RunSpec Sample() {
  RunSpec s;
  s.program = RunProgram::kNodeScript;
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
  EXPECT_EQ(a.program, b.program);
  EXPECT_EQ(a.script_path, b.script_path);
  EXPECT_EQ(a.args, b.args);
  EXPECT_EQ(a.envp, b.envp);
  EXPECT_EQ(a.switch_ids, b.switch_ids);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.seccomp, b.seccomp);
  EXPECT_EQ(a.seccomp_bpf, b.seccomp_bpf);
  EXPECT_EQ(a.limits.nproc, b.limits.nproc);
  EXPECT_EQ(a.limits.address_space, b.limits.address_space);
  EXPECT_EQ(a.limits.data, b.limits.data);
  EXPECT_EQ(a.limits.cpu_seconds, b.limits.cpu_seconds);
  EXPECT_EQ(a.limits.fsize, b.limits.fsize);
  EXPECT_EQ(a.limits.nofile, b.limits.nofile);
}

TEST(RunSpec, Roundtrip) {
  const RunSpec s = Sample();
  auto d = DecodeRunSpec(EncodeRunSpec(s));
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
}

TEST(RunSpec, RoundtripDirectArgvWithoutScriptPath) {
  RunSpec s = Sample();
  s.program = RunProgram::kDirectArgv;
  s.script_path.clear();
  s.switch_ids = false;
  s.seccomp = false;
  s.seccomp_bpf.clear();
  auto d = DecodeRunSpec(EncodeRunSpec(s));
  ASSERT_TRUE(d.has_value());
  ExpectSame(s, *d);
}

TEST(RunSpec, EveryTruncationIsRefused) {
  const std::string bytes = EncodeRunSpec(Sample());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(DecodeRunSpec(std::string_view(bytes).substr(0, n)).has_value()) << n;
}

TEST(RunSpec, TrailingBytesAreRefused) {
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(Sample()) + '\0').has_value());
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(Sample()) + "x").has_value());
}

TEST(RunSpec, BadMagicVersionFlagsAndReservedAreRefused) {
  const std::string good = EncodeRunSpec(Sample());
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}, size_t{9}, size_t{10}, size_t{11}}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] + 2);  // program 2, flag 2/3, reserved 2, ...
    EXPECT_FALSE(DecodeRunSpec(bad).has_value()) << "byte " << at;
  }
}

TEST(RunSpec, OversizedInputIsRefused) {
  RunSpec s = Sample();
  s.args = {std::string(kRunSpecMaxBytes, 'a')};
  EXPECT_GT(EncodeRunSpec(s).size(), kRunSpecMaxBytes);
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(s)).has_value());
}

TEST(RunSpec, TooManyStringsAreRefused) {
  RunSpec s = Sample();
  s.args.assign(kRunSpecMaxStrings, "a");  // plus 4 envp entries: over the cap
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(s)).has_value());
  s.args.resize(kRunSpecMaxStrings - s.envp.size());
  EXPECT_TRUE(DecodeRunSpec(EncodeRunSpec(s)).has_value());
}

TEST(RunSpec, CountsLargerThanTheInputAreRefusedWithoutAllocating) {
  std::string bytes = EncodeRunSpec(Sample());
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
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(a)).has_value());
  RunSpec e = Sample();
  e.envp.push_back(std::string("A=b\0c", 5));
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(e)).has_value());
  RunSpec p = Sample();
  p.script_path = std::string("/x\0y", 4);
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(p)).has_value());
}

TEST(RunSpec, BadEnvEntriesAreRefused) {
  for (const char* bad : {"NOEQUALS", "=value", "1ABC=x", "A B=x", "A-B=x", "Ä=x", "A.B=x"}) {
    RunSpec s = Sample();
    s.envp.push_back(bad);
    EXPECT_FALSE(IsValidRunSpec(s)) << bad;
    EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(s)).has_value()) << bad;
  }
  for (const char* good : {"_=x", "a1=", "LONG_NAME_9=with=equals"}) {
    RunSpec s = Sample();
    s.envp.push_back(good);
    EXPECT_TRUE(DecodeRunSpec(EncodeRunSpec(s)).has_value()) << good;
  }
}

TEST(RunSpec, DuplicateEnvNamesAreRefused) {
  RunSpec s = Sample();
  s.envp.push_back("PATH=/evil");
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(s)).has_value());
}

// Seccomp on needs a program of whole 8-byte instructions within BPF_MAXINSNS; off
// needs none (a program that would not be loaded means the broker meant otherwise).
TEST(RunSpec, SeccompProgramSizeIsChecked) {
  for (size_t bad : {size_t{0}, size_t{7}, size_t{9}, kRunSpecMaxBpfBytes + 8}) {
    RunSpec s = Sample();
    s.seccomp_bpf.assign(bad, '\x06');
    EXPECT_FALSE(IsValidRunSpec(s)) << bad;
    EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(s)).has_value()) << bad;
  }
  for (size_t good : {size_t{8}, kRunSpecMaxBpfBytes}) {
    RunSpec s = Sample();
    s.seccomp_bpf.assign(good, '\x06');
    EXPECT_TRUE(DecodeRunSpec(EncodeRunSpec(s)).has_value()) << good;
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
  auto d = DecodeRunSpec(EncodeRunSpec(s));
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->namespaces);
  EXPECT_EQ(d->skill_dir_path, s.skill_dir_path);
  EXPECT_EQ(d->hidden_roots, s.hidden_roots);
  for (auto bad : {std::vector<std::string>{"/"}, std::vector<std::string>{"relative"},
                   std::vector<std::string>{""}}) {
    RunSpec b = s;
    b.hidden_roots = bad;
    EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(b)).has_value()) << bad[0];
  }
  RunSpec rel = s;
  rel.skill_dir_path = "weather";
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(rel)).has_value());
  RunSpec many = s;
  many.hidden_roots.assign(kRunSpecMaxHiddenRoots + 1, "/srv/x");
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(many)).has_value());
  RunSpec off = s;  // a view that would not be built: the broker meant something else
  off.namespaces = false;
  EXPECT_FALSE(IsValidRunSpec(off));
}

TEST(RunSpec, NodeScriptNeedsAnAbsolutePathAndDirectArgvAnArgv0) {
  RunSpec rel = Sample();
  rel.script_path = "scripts/main.js";
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(rel)).has_value());
  RunSpec empty = Sample();
  empty.script_path.clear();
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(empty)).has_value());
  RunSpec direct = Sample();
  direct.program = RunProgram::kDirectArgv;
  direct.args.clear();
  EXPECT_FALSE(DecodeRunSpec(EncodeRunSpec(direct)).has_value());
}

}  // namespace
}  // namespace skillmcp

// The fuzz corpus (tests/fuzz/corpus/run_spec) replayed as an ordinary test, with the
// fuzz target's invariants: accepted means valid and canonical.
#include <dirent.h>

#include <fstream>
#include <iterator>
#include <set>

#include "config.h"

namespace skillmcp {
namespace {

TEST(RunSpecCorpus, ReplaysWithTheFuzzInvariants) {
  const std::string dir = std::string(SKILL_MCP_SOURCE_ROOT) + "/tests/fuzz/corpus/run_spec";
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  std::set<std::string> accepted;
  int files = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++files;
    std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto spec = DecodeRunSpec(bytes);
    if (!spec) continue;
    accepted.insert(e->d_name);
    EXPECT_TRUE(IsValidRunSpec(*spec)) << e->d_name;
    EXPECT_EQ(EncodeRunSpec(*spec), bytes) << e->d_name;
  }
  closedir(d);
  EXPECT_GE(files, 10);
  EXPECT_EQ(accepted, (std::set<std::string>{"direct-argv", "minimal", "node-script"}));
}

}  // namespace
}  // namespace skillmcp
