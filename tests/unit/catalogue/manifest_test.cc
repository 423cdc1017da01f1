#include "broker/catalogue/manifest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "broker/catalogue/reasons.h"
#include "broker/catalogue/scan.h"
#include "tests/unit/catalogue/temp_tree.h"

namespace skillmcp {
namespace {

using testing::TempTree;
using testing::Walk;

std::vector<std::string> Paths(const ManifestResult& m) {
  std::vector<std::string> out;
  for (const auto& f : m.files) out.push_back(f.path);
  return out;
}

// A problem with `reason` at the skill directory `dir` about the entry `rel` (named first
// in its detail): file-level problems carry the skill directory, not the file.
bool Has(const ManifestResult& m, const char* reason, const std::string& dir,
         const std::string& rel) {
  for (const auto& p : m.problems) {
    if (p.reason == reason && p.path == dir && p.detail.rfind("'" + rel + "': ", 0) == 0)
      return true;
  }
  return false;
}

bool Has(const ManifestResult& m, const char* reason, const std::string& dir) {
  for (const auto& p : m.problems) {
    if (p.reason == reason && p.path == dir) return true;
  }
  return false;
}

std::string Dump(const ManifestResult& m) {
  std::string s;
  for (const auto& p : m.problems) s += p.reason + " " + p.path + ": " + p.detail + "\n";
  return s;
}

TEST(Manifest, RegularFilesCollatedWithSizes) {
  TempTree t;
  t.Write("SKILL.md", "12345");
  t.Write("scripts/y.js", "ab");
  t.Write("references/x.md", "abc");
  t.Write("references/deep/z.txt", "");
  ManifestResult m = Walk(t.root());
  EXPECT_EQ(Paths(m), (std::vector<std::string>{"references/deep/z.txt", "references/x.md",
                                                "scripts/y.js", "SKILL.md"}));
  EXPECT_EQ(m.bytes, 10u);
  EXPECT_EQ(m.files[1].size, 3u);
  EXPECT_TRUE(m.problems.empty()) << Dump(m);
}

// Every symlink is skipped silently, in the skill or out: not listed, not counted, no
// problem (the reference walks with lstat).
TEST(Manifest, EverySymlinkSkippedSilently) {
  TempTree t;
  t.Write("secret.txt", "top secret");
  t.Write("s/real.txt", "1234");
  t.Write("s/data/a.txt", "a");
  t.Symlink("real.txt", "s/alias.txt");
  t.Symlink("data", "s/view");
  t.Symlink(t.Path("secret.txt"), "s/abs-out.txt");
  t.Symlink("../secret.txt", "s/rel-out.txt");
  t.Symlink("nowhere", "s/dangling");
  t.Symlink("..", "s/data/up");
  t.Symlink("bad%41", "s/pct%41-link");  // a link's name is never judged either
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_EQ(Paths(m), (std::vector<std::string>{"data/a.txt", "real.txt"})) << Dump(m);
  EXPECT_EQ(m.bytes, 5u);
  EXPECT_TRUE(m.problems.empty()) << Dump(m);
}

TEST(Manifest, UnusableNamesLeftOut) {
  TempTree t;
  t.Write("s/ok.txt", "1");
  t.Write("s/back\\slash.txt", "1");
  t.Write("s/pct%41.txt", "1");
  t.Write("s/   ", "1");
  t.Write("s/bad\xFFname.txt", "1");
  t.Write("s/dir\\x/inner.txt", "1");
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_EQ(Paths(m), std::vector<std::string>{"ok.txt"}) << Dump(m);
  EXPECT_TRUE(Has(m, reason::kUnusablePath, t.Path("s"), "back\\slash.txt")) << Dump(m);
  EXPECT_TRUE(Has(m, reason::kUnusablePath, t.Path("s"), "pct%41.txt"));
  EXPECT_TRUE(Has(m, reason::kUnusablePath, t.Path("s"), "   "));
  EXPECT_TRUE(Has(m, reason::kUnusablePath, t.Path("s"), "bad\\xffname.txt")) << Dump(m);
  EXPECT_TRUE(Has(m, reason::kUnusablePath, t.Path("s"), "dir\\x"));
  EXPECT_EQ(m.problems.size(), 5u) << Dump(m);
}

TEST(Manifest, OverlongPathUnusable) {
  TempTree t;
  std::string rel;
  for (int i = 0; i < 6; ++i) rel += std::string(200, 'd') + "/";
  t.Write("s/" + rel + "f.txt", "1");
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_TRUE(m.files.empty());
  ASSERT_EQ(m.problems.size(), 1u) << Dump(m);
  EXPECT_EQ(m.problems[0].reason, reason::kUnusablePath);
}

TEST(Manifest, NonRegularFilesLeftOutWithoutHanging) {
  TempTree t;
  t.Write("s/a.txt", "1");
  t.Fifo("s/pipe");
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_EQ(Paths(m), std::vector<std::string>{"a.txt"});
  EXPECT_TRUE(m.problems.empty());
}

TEST(Manifest, FileLimit) {
  TempTree t;
  t.Mkdir("s");
  for (size_t i = 0; i <= kMaxFilesPerSkill; ++i) {
    int fd = open(t.Path("s/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "x", 1), 1);
    close(fd);
  }
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_EQ(m.files.size(), kMaxFilesPerSkill);
  EXPECT_EQ(m.bytes, kMaxFilesPerSkill);
  EXPECT_TRUE(Has(m, reason::kFileLimit, t.Path("s"))) << Dump(m);
}

TEST(Manifest, ExactlyAtFileLimitIsFine) {
  TempTree t;
  t.Mkdir("s");
  for (size_t i = 0; i < kMaxFilesPerSkill; ++i) {
    int fd = open(t.Path("s/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_EQ(m.files.size(), kMaxFilesPerSkill);
  EXPECT_TRUE(m.problems.empty());
}

TEST(Manifest, DirectoryLimit) {
  TempTree t;
  t.Write("s/SKILL.md", "x");
  for (size_t i = 0; i <= kMaxDirsPerSkill; ++i)
    ASSERT_EQ(mkdir(t.Path("s/d" + std::to_string(i)).c_str(), 0755), 0);
  ManifestResult m = Walk(t.Path("s"));
  EXPECT_TRUE(Has(m, reason::kFileLimit, t.Path("s"))) << Dump(m);
}

TEST(Manifest, ScanCarriesManifestAndProblems) {
  TempTree t;
  t.Skill("root/s", "s");
  t.Write("root/s/scripts/run.js", "abc");
  t.Write("root/outside.txt", "x");
  t.Symlink("../outside.txt", "root/s/leak.txt");
  t.Write("root/s/100%.txt", "1");
  Catalogue cat = ScanCatalogue({t.Path("root")}, "default");
  ASSERT_EQ(cat.skills.size(), 1u);
  const Skill& s = cat.skills[0];
  EXPECT_EQ(s.files.size(), 2u);
  EXPECT_EQ(s.files[0].path, "scripts/run.js");
  EXPECT_EQ(s.files[1].path, "SKILL.md");
  EXPECT_EQ(s.bytes, s.files[0].size + s.files[1].size);
  // The link out of the skill is skipped silently; the unusable name is reported at the
  // skill directory.
  ASSERT_EQ(cat.problems.size(), 1u) << testing::DumpProblems(cat);
  EXPECT_EQ(cat.problems[0].reason, reason::kUnusablePath);
  EXPECT_EQ(cat.problems[0].path, t.Path("root/s"));
}

}  // namespace
}  // namespace skillmcp
