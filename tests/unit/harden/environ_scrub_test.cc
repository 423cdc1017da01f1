#include "broker/harden/environ_scrub.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "broker/harden/env_store.h"
#include "broker/harden/process_harden.h"

namespace skillmcp {
namespace {

TEST(ParseEnvRange, CountsFieldsAfterTheLastParenthesis) {
  // 52 fields; the command name holds ") " and digits to try to shift the count.
  std::string stat = "1234 (evil) 1 2 3) S";
  for (int f = 4; f <= 52; ++f) {
    stat += " ";
    stat += f == 50 ? "140737488347000" : f == 51 ? "140737488348000" : std::to_string(f);
  }
  uint64_t start = 0, end = 0;
  ASSERT_TRUE(ParseEnvRange(stat, &start, &end));
  EXPECT_EQ(start, 140737488347000u);
  EXPECT_EQ(end, 140737488348000u);
}

TEST(ParseEnvRange, RefusesShortOrMalformedText) {
  uint64_t s, e;
  EXPECT_FALSE(ParseEnvRange("", &s, &e));
  EXPECT_FALSE(ParseEnvRange("1 (x) S 1 2 3", &s, &e));
  std::string bad = "1 (x) S";
  for (int f = 4; f <= 51; ++f) bad += f == 50 ? " 12z" : " 7";
  EXPECT_FALSE(ParseEnvRange(bad, &s, &e));
  std::string reversed = "1 (x) S";
  for (int f = 4; f <= 51; ++f) reversed += f == 50 ? " 900" : f == 51 ? " 100" : " 7";
  EXPECT_FALSE(ParseEnvRange(reversed, &s, &e));
}

TEST(RangeInWritableMapping, NeedsOneReadWriteMapping) {
  std::string maps =
      "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x\n"
      "7ffd0000-7ffe0000 rw-p 00000000 00:00 0 [stack]\n";
  EXPECT_TRUE(RangeInWritableMapping(maps, 0x7ffd1000, 0x7ffd2000));
  EXPECT_FALSE(RangeInWritableMapping(maps, 0x00401000, 0x00402000));  // read-only
  EXPECT_FALSE(RangeInWritableMapping(maps, 0x7ffdf000, 0x7fff0000));  // runs past the end
  EXPECT_FALSE(RangeInWritableMapping(maps, 0x1000, 0x2000));          // unmapped
}

// The real thing runs in a re-exec'd copy of this binary, so the environ block is one
// we wrote (with a known secret) and the wipe cannot disturb the test runner.
constexpr char kHelperVar[] = "SKILL_MCP_SCRUB_HELPER";
constexpr char kSecret[] = "hunter2-scrub-canary";

bool ProcEnvironHasBytes(pid_t pid, std::string* content) {
  std::string path = "/proc/" + std::to_string(pid) + "/environ";
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  content->clear();
  while ((n = read(fd, buf, sizeof buf)) > 0) content->append(buf, n);
  close(fd);
  return true;
}

TEST(ScrubHelper, DISABLED_Body) {
  const char* mode = getenv(kHelperVar);
  if (mode == nullptr) GTEST_SKIP() << "only runs inside the re-exec'd helper process";
  std::string m = mode;
  // Precondition: the block holds the secret before the wipe.
  std::string before;
  ASSERT_TRUE(ProcEnvironHasBytes(getpid(), &before));
  ASSERT_NE(before.find(kSecret), std::string::npos);

  EnvStore store = EnvStore::Capture(environ);
  if (m == "nonroot-harden-first") {
    ASSERT_EQ(setresgid(65534, 65534, 65534), 0);
    ASSERT_EQ(setresuid(65534, 65534, 65534), 0);
  }
  if (m != "scrub-first") HardenProcess();
  ScrubResult r = ScrubEnviron();
  if (m == "scrub-first") HardenProcess();
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(getenv("SECRET_TOKEN"), nullptr);
  EXPECT_EQ(store.GetConfig("SECRET_TOKEN"), kSecret);
  std::printf("SCRUB %s %s\n", r.ok ? "ok" : "failed", r.detail.c_str());
  std::fflush(stdout);
  char c;
  (void)!read(0, &c, 1);  // hold still while the parent looks at /proc/<pid>/environ
}

struct HelperOutcome {
  std::string line;
  std::string environ_seen;  // read from outside while the helper waited
  bool environ_readable = false;
  int status = -1;
};

HelperOutcome RunHelper(const std::string& mode) {
  HelperOutcome out;
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return out;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    // Only 0 and 1 may hold the pipes, or the helper never sees EOF on stdin.
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    std::string var = std::string(kHelperVar) + "=" + mode;
    std::string secret = std::string("SECRET_TOKEN=") + kSecret;
    char* envp[] = {var.data(), secret.data(), const_cast<char*>("PLAIN=1"), nullptr};
    char* argv[] = {const_cast<char*>("harden_test"),
                    const_cast<char*>("--gtest_also_run_disabled_tests"),
                    const_cast<char*>("--gtest_filter=ScrubHelper.DISABLED_Body"), nullptr};
    execve("/proc/self/exe", argv, envp);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  char buf[4096];
  ssize_t n;
  while (out.line.find("SCRUB ") == std::string::npos || out.line.back() != '\n') {
    n = read(from_child[0], buf, sizeof buf);
    if (n <= 0) break;
    out.line.append(buf, n);
  }
  out.environ_readable = ProcEnvironHasBytes(pid, &out.environ_seen);
  close(to_child[1]);
  while ((n = read(from_child[0], buf, sizeof buf)) > 0) out.line.append(buf, n);
  close(from_child[0]);
  waitpid(pid, &out.status, 0);
  return out;
}

void ExpectWiped(const HelperOutcome& o) {
  EXPECT_NE(o.line.find("SCRUB ok"), std::string::npos) << o.line;
  ASSERT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << o.line;
  if (o.environ_readable) {
    EXPECT_EQ(o.environ_seen.find(kSecret), std::string::npos);
    for (char c : o.environ_seen) ASSERT_EQ(c, '\0');
  } else {
    // Non-root test runner and a non-dumpable helper: only the helper's own check counts.
    EXPECT_NE(getuid(), 0u) << "root must always be able to read /proc/<pid>/environ";
  }
}

TEST(ScrubEnviron, WipesWhileStillDumpable) { ExpectWiped(RunHelper("scrub-first")); }

TEST(ScrubEnviron, WipesAfterTheProcessIsNonDumpable) { ExpectWiped(RunHelper("harden-first")); }

TEST(ScrubEnviron, WipesAsAnOrdinaryUidAfterTheProcessIsNonDumpable) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to run the helper as uid 65534";
  HelperOutcome o = RunHelper("nonroot-harden-first");
  ExpectWiped(o);
  // /proc/self/mem was not openable for that uid; the in-place path did the work.
  EXPECT_NE(o.line.find("zeroed in place"), std::string::npos) << o.line;
}

}  // namespace
}  // namespace skillmcp
