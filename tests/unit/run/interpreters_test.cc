#include "broker/run/interpreters.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "broker/harden/privileges.h"
#include "broker/run/launch_config.h"

namespace skillmcp {
namespace {

constexpr char kPath[] = "/usr/local/bin:/usr/bin:/bin";

TEST(ParseInterpreterNames, UnsetIsNodeAlone) {
  InterpreterNames n = ParseInterpreterNames(std::nullopt);
  EXPECT_EQ(n.error, "");
  EXPECT_EQ(n.names, std::vector<std::string>{"node"});
}

TEST(ParseInterpreterNames, KnownNamesInOrder) {
  EXPECT_EQ(ParseInterpreterNames("node,python3").names,
            (std::vector<std::string>{"node", "python3"}));
  EXPECT_EQ(ParseInterpreterNames(" python3 , node").names,
            (std::vector<std::string>{"python3", "node"}));
  EXPECT_EQ(ParseInterpreterNames("python3").names, std::vector<std::string>{"python3"});
}

TEST(ParseInterpreterNames, AnythingElseStopsTheBoot) {
  for (const char* bad : {"", "node,", ",node", "node,ruby", "python", "Node", "node,node",
                          "/usr/bin/python3", "node;python3"}) {
    InterpreterNames n = ParseInterpreterNames(std::string(bad));
    EXPECT_NE(n.error, "") << bad;
    EXPECT_TRUE(n.names.empty()) << bad;
    EXPECT_NE(n.error.find("SKILL_MCP_INTERPRETERS=\"" + std::string(bad) + "\""),
              std::string::npos)
        << n.error;
  }
}

TEST(VersionFromName, OnlyAPythonNameWithDigits) {
  EXPECT_EQ(VersionFromName("/usr/bin/python3.11"), "3.11");
  EXPECT_EQ(VersionFromName("/opt/py/bin/python3.12"), "3.12");
  EXPECT_EQ(VersionFromName("/usr/bin/python3"), "3");
  EXPECT_EQ(VersionFromName("/usr/bin/python"), "");
  EXPECT_EQ(VersionFromName("/usr/bin/python3.11-dbg"), "");
  EXPECT_EQ(VersionFromName("/usr/bin/node"), "");
}

class PinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-pin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A copy of a real ELF binary (so only the property under test differs).
  std::string CopyOf(const std::string& from, const std::string& name, mode_t mode) {
    const std::string to = dir_ + "/" + name;
    std::filesystem::copy_file(from, to);
    chmod(to.c_str(), mode);
    return to;
  }
  std::string Pin(EnvStore& env, const std::vector<std::string>& places = {}) {
    pinned_ = PinnedInterpreter{};
    return PinInterpreter(env, "python3", places, kPath, &pinned_);
  }
  std::string dir_;
  PinnedInterpreter pinned_;
};

TEST_F(PinTest, DebiansPython3ResolvesThroughItsLink) {
  EnvStore env;
  env.Set("SKILL_MCP_PYTHON3", "/usr/bin/python3");
  ASSERT_EQ(Pin(env), "");
  const std::string real = std::filesystem::canonical("/usr/bin/python3").string();
  EXPECT_EQ(pinned_.path, real);
  EXPECT_EQ(pinned_.kind, InterpreterKind::kPython3);
  EXPECT_EQ(pinned_.dir, "/usr");
  EXPECT_EQ(pinned_.version, VersionFromName(real));
  EXPECT_TRUE(pinned_.fd.valid());
}

TEST_F(PinTest, PathSearchWhenNoVariable) {
  EnvStore env;
  env.Set("PATH", "relative:/usr/bin");
  ASSERT_EQ(Pin(env), "");
  EXPECT_EQ(pinned_.path, std::filesystem::canonical("/usr/bin/python3").string());
  EnvStore none;
  none.Set("PATH", dir_);
  const std::string why = Pin(none);
  EXPECT_NE(why.find("no python3 was found on the broker's PATH; install python3 or set "
                     "SKILL_MCP_PYTHON3"),
            std::string::npos)
      << why;
}

TEST_F(PinTest, AShimIsRefused) {
  const std::string shim = dir_ + "/python3";
  std::ofstream(shim) << "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n";
  chmod(shim.c_str(), 0755);
  // A shim an ordinary user made is refused for its owner first (the check before the
  // format); root's own shim for its format.
  const std::string reason = geteuid() == 0 ? "is not an ELF executable" : "not root";
  EnvStore env;
  env.Set("SKILL_MCP_PYTHON3", shim);
  const std::string why = Pin(env);
  EXPECT_NE(why.find(reason), std::string::npos) << why;
  EXPECT_FALSE(pinned_.fd.valid());
  // The same shim first on PATH: refused, never skipped for the next entry.
  EnvStore path;
  path.Set("PATH", dir_ + ":/usr/bin");
  EXPECT_NE(Pin(path).find(reason), std::string::npos);
}

TEST_F(PinTest, WritableByOthersIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "a root-owned copy needs root";
  const std::string copy =
      CopyOf(std::filesystem::canonical("/usr/bin/python3"), "python3.11", 0775);
  EnvStore env;
  env.Set("SKILL_MCP_PYTHON3", copy);
  EXPECT_NE(Pin(env).find("is writable by its group or by others"), std::string::npos);
  chmod(copy.c_str(), 0755);
  EXPECT_EQ(Pin(env), "");  // the control: root-owned, 0755, outside the private places
  ASSERT_EQ(chown(copy.c_str(), 65534, 65534), 0);
  EXPECT_NE(Pin(env).find("not root"), std::string::npos);
}

// The directories above the binary and those python imports from by path must be root's
// alone: a staff-writable /usr/local/lib/python3.X/dist-packages would let its group run
// code in every Python run.
TEST_F(PinTest, ADirectoryItImportsFromThatOthersMayWriteIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "a root-owned copy needs root";
  ASSERT_EQ(mkdir((dir_ + "/bin").c_str(), 0755), 0);
  const std::string copy =
      CopyOf(std::filesystem::canonical("/usr/bin/python3"), "bin/python3.11", 0755);
  EnvStore env;
  env.Set("SKILL_MCP_PYTHON3", copy);
  EXPECT_EQ(Pin(env), "");  // the control: every directory root's alone, /tmp sticky above
  EXPECT_EQ(pinned_.dir, dir_);
  const std::string dist = dir_ + "/local/lib/python3.11/dist-packages";
  std::filesystem::create_directories(dist);
  EXPECT_EQ(Pin(env), "");
  chmod(dist.c_str(), 02775);
  std::string why = Pin(env);
  EXPECT_NE(why.find(dist + " (above or holding what"), std::string::npos) << why;
  EXPECT_FALSE(pinned_.fd.valid());
  chmod(dist.c_str(), 0755);
  chmod((dir_ + "/bin").c_str(), 0777);  // the binary's own directory
  why = Pin(env);
  EXPECT_NE(why.find(dir_ + "/bin (above"), std::string::npos) << why;
  chmod((dir_ + "/bin").c_str(), 0755);
  ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);  // an ancestor of both
  EXPECT_NE(Pin(env).find(dir_ + " (above"), std::string::npos);
}

TEST_F(PinTest, UnderAPrivatePlaceIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "a root-owned copy needs root";
  const std::string copy =
      CopyOf(std::filesystem::canonical("/usr/bin/python3"), "python3.11", 0755);
  EnvStore env;
  env.Set("SKILL_MCP_PYTHON3", copy);
  const std::string why = Pin(env, {dir_});
  EXPECT_NE(why.find("is under " + dir_ + ", a place runs do not see"), std::string::npos) << why;
  EXPECT_EQ(Pin(env, {"/srv"}), "");
}

TEST_F(PinTest, NodeKeepsItsOwnChecks) {
  // node is pinned as it always was: a script at SKILL_MCP_NODE is opened, not refused
  // for its format (the runs' exec then says what is wrong).
  const std::string script = dir_ + "/node";
  std::ofstream(script) << "#!/bin/true\n";
  chmod(script.c_str(), 0755);
  EnvStore env;
  env.Set("SKILL_MCP_NODE", script);
  PinnedInterpreter node;
  EXPECT_EQ(PinInterpreter(env, "node", {dir_}, kPath, &node), "");
  EXPECT_EQ(node.kind, InterpreterKind::kNode);
  EXPECT_EQ(node.version, "");
}

TEST(ResolveLaunchConfig, TheSetIsPinnedWithItsVariable) {
  EnvStore env;
  env.Set("SKILL_MCP_WORKER", SKILL_MCP_TEST_WORKER);
  env.Set("SKILL_MCP_NODE", "/usr/bin/node");
  env.Set("SKILL_MCP_INTERPRETERS", "node,python3");
  env.Set("SKILL_MCP_PYTHON3", "/usr/bin/python3");
  LaunchConfigResult r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->ready()) << r.config->refusal;
  EXPECT_TRUE(r.config->interpreters_configured);
  ASSERT_NE(r.config->Interpreter("python3"), nullptr);
  EXPECT_EQ(r.config->Interpreter("python3")->path,
            std::filesystem::canonical("/usr/bin/python3").string());
  EXPECT_EQ(r.config->Interpreter("ruby"), nullptr);
  EXPECT_NE(LayerFacts(*r.config).interpreters.find("python3 "), std::string::npos);

  // One that cannot be pinned refuses every run, with its reason.
  env.Set("SKILL_MCP_PYTHON3", "/nonexistent/python3");
  r = ResolveLaunchConfig(env, PrivilegeState{});
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_FALSE(r.config->ready());
  EXPECT_NE(r.config->refusal.find("python3 at /nonexistent/python3 cannot be resolved"),
            std::string::npos)
      << r.config->refusal;

  env.Set("SKILL_MCP_INTERPRETERS", "node,perl");
  r = ResolveLaunchConfig(env, PrivilegeState{});
  EXPECT_FALSE(r.config);
  EXPECT_NE(r.error.find("SKILL_MCP_INTERPRETERS=\"node,perl\""), std::string::npos);
}

}  // namespace
}  // namespace skillmcp
