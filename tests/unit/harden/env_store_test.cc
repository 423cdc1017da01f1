#include "broker/harden/env_store.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/unit/harden/child.h"

namespace skillmcp {
namespace {

TEST(IsUsableValue, BlankAndPlaceholdersCountAsUnset) {
  EXPECT_FALSE(IsUsableValue(""));
  EXPECT_FALSE(IsUsableValue("   "));
  EXPECT_FALSE(IsUsableValue("\t\n "));
  EXPECT_FALSE(IsUsableValue("${MCP_SKILLS_PATH}"));
  EXPECT_FALSE(IsUsableValue("  ${WEATHER_API_KEY} "));
  EXPECT_TRUE(IsUsableValue("x"));
  EXPECT_TRUE(IsUsableValue(" value with spaces "));
  EXPECT_TRUE(IsUsableValue("${A}/bin"));  // text after the placeholder: a real value
  EXPECT_TRUE(IsUsableValue("prefix${A}"));
  EXPECT_TRUE(IsUsableValue("${A}${B}"));  // two placeholders are not one unexpanded token
  EXPECT_TRUE(IsUsableValue("$HOME"));
}

TEST(EnvStore, CaptureCopiesEveryVariableLaterDuplicateWins) {
  std::vector<std::string> raw = {"A=1", "B=two=2", "A=3", "NOEQUALS", "=nameless", "EMPTY="};
  std::vector<char*> envp;
  for (auto& s : raw) envp.push_back(s.data());
  envp.push_back(nullptr);
  EnvStore store = EnvStore::Capture(envp.data());
  // The store holds its own copies: wiping the source must not change it.
  for (auto& s : raw) std::fill(s.begin(), s.end(), 'X');
  EXPECT_EQ(store.GetConfig("A"), "3");
  EXPECT_EQ(store.GetConfig("B"), "two=2");
  EXPECT_FALSE(store.IsSet("NOEQUALS"));
  EXPECT_FALSE(store.IsSet("EMPTY"));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"A", "B", "EMPTY"}));
}

TEST(EnvStore, CaptureOfNullIsEmpty) {
  EnvStore store = EnvStore::Capture(nullptr);
  EXPECT_TRUE(store.Names().empty());
}

TEST(EnvStore, SetReplacesAndBlankOrPlaceholderIsUnset) {
  EnvStore store;
  store.Set("KEY", "secret");
  EXPECT_TRUE(store.IsSet("KEY"));
  store.Set("KEY", "   ");
  EXPECT_FALSE(store.IsSet("KEY"));
  EXPECT_EQ(store.GetConfig("KEY"), std::nullopt);
  store.Set("KEY", "${KEY}");
  EXPECT_FALSE(store.IsSet("KEY"));
  store.Set("KEY", "again");
  EXPECT_EQ(store.GetConfig("KEY"), "again");
  EXPECT_FALSE(store.IsSet("MISSING"));
  // A name whose value is unusable is still listed (doctor shows names), never its value.
  store.Set("BLANK", "");
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"BLANK", "KEY"}));
}

TEST(EnvStore, WithValueCallsOnlyForUsableValues) {
  EnvStore store;
  store.Set("TOKEN", std::string("a\0b", 3));
  store.Set("BLANK", " ");
  std::string seen;
  EXPECT_TRUE(store.WithValue("TOKEN", [&](std::string_view v) { seen = std::string(v); }));
  EXPECT_EQ(seen, std::string("a\0b", 3));
  bool called = false;
  EXPECT_FALSE(store.WithValue("BLANK", [&](std::string_view) { called = true; }));
  EXPECT_FALSE(store.WithValue("NOPE", [&](std::string_view) { called = true; }));
  EXPECT_FALSE(called);
}

TEST(EnvStore, MovedStoreKeepsValues) {
  EnvStore a;
  a.Set("X", "1");
  EnvStore b(std::move(a));
  EXPECT_EQ(b.GetConfig("X"), "1");
  EnvStore c;
  c = std::move(b);
  EXPECT_EQ(c.GetConfig("X"), "1");
}

// The guarded page is readable inside WithValue only: touching it afterwards faults.
// Would pass silently if the store kept values in ordinary memory.
TEST(EnvStoreDeathTest, ValueIsNoAccessOutsideWithValue) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EnvStore store;
  store.Set("SECRET", "hunter2");
  const volatile char* leaked = nullptr;
  ASSERT_TRUE(store.WithValue("SECRET", [&](std::string_view v) { leaked = v.data(); }));
  ASSERT_NE(leaked, nullptr);
  EXPECT_DEATH({ (void)leaked[0]; }, "");
}

}  // namespace
}  // namespace skillmcp

namespace skillmcp {
namespace {

// A large environment (CI runners export hundreds of variables) must not exhaust the
// locked-memory limit or the mapping count: each value gets its own guarded block.
TEST(EnvStore, ThousandsOfVariablesFit) {
  std::vector<std::string> raw;
  for (int i = 0; i < 3000; ++i)
    raw.push_back("VAR_" + std::to_string(i) + "=value-" + std::to_string(i));
  std::vector<char*> envp;
  for (auto& s : raw) envp.push_back(s.data());
  envp.push_back(nullptr);
  EnvStore store = EnvStore::Capture(envp.data());
  EXPECT_EQ(store.Names().size(), 3000u);
  EXPECT_EQ(store.GetConfig("VAR_2999"), "value-2999");
}

// Under a small RLIMIT_MEMLOCK (64 KiB was a common default) the store still works:
// libsodium's mlock is best effort, the guard pages and no-access are what matter.
TEST(EnvStore, WorksUnderASmallLockedMemoryLimit) {
  int rc = testing::InChild([] {
    rlimit small{65536, 65536};
    if (setrlimit(RLIMIT_MEMLOCK, &small) != 0) return 1;
    // Without CAP_IPC_LOCK the limit really applies.
    if (getuid() == 0 &&
        (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
      return 2;
    EnvStore store;
    for (int i = 0; i < 500; ++i) store.Set("V" + std::to_string(i), "x");
    return store.GetConfig("V499") == "x" ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace skillmcp
