// ScanCatalogue reads skills on several threads (broker/catalogue/scan.h): the catalogue
// must be exactly the one a single thread makes, skills, manifests and problems in the
// same order, with the skill limit applied to the same candidates.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::TempTree;

// Everything a listing shows, in order, as one text.
std::string Describe(const Catalogue& cat) {
  std::string out;
  for (const Skill& s : cat.skills) {
    out += "skill " + s.name + " " + s.source + " body=" + std::to_string(s.body.size()) +
           " runs=" + std::to_string(s.runs.size()) +
           " declared=" + std::to_string(s.declaration_ok) +
           " omitted=" + (s.skills_ext_omission ? s.skills_ext_omission->reason : "") + " " +
           s.frontmatter_json + "\n";
    for (const ManifestFile& f : s.files) out += "  " + f.path + "\n";
  }
  return out + testing::DumpProblems(cat);
}

// 50 candidates, more than kMaxSkills servable: broken ones (no frontmatter, a name the
// directory does not carry, a missing declared script, a FIFO in the bundle) are spread
// among the good ones, so the limit is reached only in the second batch.
void MakeMixedTree(const TempTree& t) {
  for (int i = 0; i < 50; ++i) {
    char dir[16];
    snprintf(dir, sizeof dir, "s%02d", i);
    const std::string d = dir;
    if (i % 7 == 3) {
      t.Write(d + "/SKILL.md", "no frontmatter\n");
    } else if (i % 11 == 5) {
      t.Skill(d, "other-name");
    } else if (i % 6 == 1) {
      t.Skill(d, d,
              "mcp-host:\n  version: 1\n  run:\n    - script: scripts/gone.js\n"
              "      interpreter: node\n");
    } else {
      t.Skill(d, d);
    }
    if (i % 5 == 2) t.Fifo(d + "/pipe");
    for (int f = 0; f < 30; ++f) t.Write(d + "/refs/r" + std::to_string(f) + ".md", "x\n");
    // Non-ASCII paths take the ICU comparator, on whichever thread reads the skill.
    if (i % 4 == 0) t.Write(d + "/refs/\xc3\xa9t\xc3\xa9-" + std::to_string(i) + ".md", "x\n");
  }
}

TEST(ScanThreads, AnyNumberOfThreadsMakesTheSameCatalogue) {
  TempTree t;
  MakeMixedTree(t);
  const Catalogue one = ScanCatalogue({t.root()}, "SKILLS_DIR", 1);
  ASSERT_EQ(one.skills.size(), kMaxSkills);
  ASSERT_FALSE(testing::ProblemsWith(one, reason::kSkillLimit).empty()) << Describe(one);
  const std::string want = Describe(one);
  for (unsigned threads : {2u, 3u, 4u, 8u, 64u}) {
    EXPECT_EQ(Describe(ScanCatalogue({t.root()}, "SKILLS_DIR", threads)), want)
        << threads << " threads";
  }
  EXPECT_GE(DefaultScanThreads(), 1u);
  EXPECT_LE(DefaultScanThreads(), 4u);
}

// The files a scan opens in the skills' directories, as inotify reports them, sorted.
std::vector<std::string> OpenedDuringScan(const TempTree& t, unsigned threads) {
  const int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (in < 0) return {"inotify_init1 failed"};
  std::vector<std::string> dirs;
  for (int i = 0; i < 50; ++i) {
    char dir[16];
    snprintf(dir, sizeof dir, "s%02d", i);
    const int wd = inotify_add_watch(in, t.Path(dir).c_str(), IN_OPEN);
    if (wd >= 0) {
      if (dirs.size() <= static_cast<size_t>(wd)) dirs.resize(static_cast<size_t>(wd) + 1);
      dirs[static_cast<size_t>(wd)] = dir;
    }
  }
  (void)ScanCatalogue({t.root()}, "SKILLS_DIR", threads);
  std::vector<std::string> opened;
  alignas(inotify_event) char buf[65536];
  for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;) {
    for (char* p = buf; p < buf + n;) {
      auto* e = reinterpret_cast<inotify_event*>(p);
      opened.push_back(dirs[static_cast<size_t>(e->wd)] + "/" + (e->len ? e->name : "."));
      p += sizeof(inotify_event) + e->len;
    }
  }
  close(in);
  std::sort(opened.begin(), opened.end());
  return opened;
}

// Threads read exactly the candidates one thread reads: none past the skill limit.
TEST(ScanThreads, NoCandidateIsReadThatOneThreadWouldNotRead) {
  TempTree t;
  MakeMixedTree(t);
  const std::vector<std::string> one = OpenedDuringScan(t, 1);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(std::count(one.begin(), one.end(), "s49/SKILL.md"), 0) << "past the limit";
  EXPECT_EQ(OpenedDuringScan(t, 4), one);
}

// Each thread may hold a deep tree's worth of descriptors: a soft RLIMIT_NOFILE that
// leaves no room for that takes threads away, down to one (checked in a child, whose
// limit can be lowered without touching the test's).
TEST(ScanThreads, TheDescriptorLimitBoundsTheThreads) {
  const pid_t child = fork();
  if (child == 0) {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    auto with = [&lim](rlim_t soft) {
      lim.rlim_cur = std::min(soft, lim.rlim_max);
      return setrlimit(RLIMIT_NOFILE, &lim) == 0;
    };
    int bad = 0;
    if (!with(1024) || ThreadsWithinDescriptors(4, 32) != 1) bad |= 1;  // 1024: one walk
    if (!with(4096) || ThreadsWithinDescriptors(4, 512) != 4) bad |= 2;
    if (!with(4096) || ThreadsWithinDescriptors(16, 512) != 6) bad |= 4;  // 3520 / 528
    if (!with(4096) || ThreadsWithinDescriptors(0, 0) != 1) bad |= 8;
    _exit(bad);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed checks (bits): " << WEXITSTATUS(status);
}

// Zero threads is taken as one, never as "read nothing".
TEST(ScanThreads, ZeroThreadsReadsOnTheCallingThread) {
  TempTree t;
  t.Skill("only", "only");
  EXPECT_EQ(testing::SkillNames(ScanCatalogue({t.root()}, "SKILLS_DIR", 0)),
            (std::vector<std::string>{"only"}));
}

}  // namespace
}  // namespace skillmcp
