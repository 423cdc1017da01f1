// The node_modules directories a run may read (broker/run/module_dirs.h): the list per
// skills root, the root each run's skill belongs to, and the owner and mode check.
#include "broker/run/module_dirs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "broker/run/launch_config.h"

namespace skillmcp {
namespace {

using Dirs = std::vector<std::string>;

Dirs Paths(const std::vector<ModuleDir>& dirs) {
  Dirs out;
  for (const ModuleDir& d : dirs) out.push_back(d.path);
  return out;
}

TEST(ModuleDirsByRoot, BesideEachRootAndItsParent) {
  const std::vector<RootModuleDirs> m = ModuleDirsByRoot({"/srv/skills", "/skills", "rel", ""}, {});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].root, "/srv/skills");
  EXPECT_EQ(m[0].dirs, (Dirs{"/srv/skills/node_modules", "/srv/node_modules"}));
  EXPECT_EQ(m[1].dirs, (Dirs{"/skills/node_modules", "/node_modules"}));
}

// A module directory in (or that is) a served skill is that skill's bundle: no run of
// another skill gets it, and none is bound from the host over a skill's own tree.
TEST(ModuleDirsByRoot, NoneInsideASkill) {
  // /srv/a/b is a root that is itself a skill (<root>/SKILL.md); /srv/x serves a skill
  // named node_modules.
  const std::vector<RootModuleDirs> m = ModuleDirsByRoot(
      {"/srv/a", "/srv/a/b", "/srv/x"}, {"/srv/a/b", "/srv/x/node_modules", "/srv/a/c"});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].dirs, (Dirs{"/srv/a/node_modules", "/srv/node_modules"}));
  EXPECT_EQ(m[1].dirs, (Dirs{"/srv/a/node_modules"})) << "not skill b's own node_modules";
  EXPECT_EQ(m[2].dirs, (Dirs{"/srv/node_modules"})) << "not the skill named node_modules";
  // A skill at a root's parent takes the parent's node_modules out as well.
  EXPECT_EQ(ModuleDirsByRoot({"/srv/p/skills"}, {"/srv/p"})[0].dirs, Dirs{});
}

TEST(IsTrustedModuleDir, RealDirectoryOfAnAcceptedOwnerOthersCannotWrite) {
  struct stat st {};
  st.st_mode = S_IFDIR | 0755;
  st.st_uid = 0;
  EXPECT_TRUE(IsTrustedModuleDir(st, 1000, 2000)) << "root";
  st.st_uid = 1000;
  EXPECT_TRUE(IsTrustedModuleDir(st, 1000, 2000)) << "the broker";
  st.st_uid = 2000;
  EXPECT_TRUE(IsTrustedModuleDir(st, 1000, 2000)) << "the root's owner";
  st.st_uid = 3000;
  EXPECT_FALSE(IsTrustedModuleDir(st, 1000, 2000)) << "another user";
  st.st_uid = 0;
  st.st_mode = S_IFDIR | 0775;
  EXPECT_FALSE(IsTrustedModuleDir(st, 1000, 2000)) << "group-writable";
  st.st_mode = S_IFDIR | 01777;
  EXPECT_FALSE(IsTrustedModuleDir(st, 1000, 2000)) << "world-writable";
  st.st_mode = S_IFLNK | 0777;
  EXPECT_FALSE(IsTrustedModuleDir(st, 1000, 2000)) << "a symlink";
}

class RunModuleDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/module-dirs-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    for (const char* d : {"/one", "/one/node_modules", "/one/s", "/two", "/two/node_modules",
                          "/node_modules"})
      ASSERT_EQ(mkdir((base_ + d).c_str(), 0755), 0) << d;
  }
  void TearDown() override { (void)!std::system(("rm -rf '" + base_ + "'").c_str()); }
  std::vector<RootModuleDirs> Roots(const Dirs& roots) {
    std::vector<RootModuleDirs> m = ModuleDirsByRoot(roots, {});
    for (RootModuleDirs& r : m) r.root_owner = kRootOwner;
    return m;
  }
  static constexpr uid_t kRootOwner = 4242;
  std::string base_;
};

// Each run gets only its own root's module directories: a root's packages are not
// another root's skills' to load (docs/isolation.md, "The filesystem allowlist").
TEST_F(RunModuleDirsTest, OnlyTheRunsOwnRoot) {
  const auto roots = Roots({base_ + "/one", base_ + "/two"});
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/one/s")),
            (Dirs{base_ + "/one/node_modules", base_ + "/node_modules"}));
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/elsewhere")), Dirs{}) << "under no root";
  // Nested roots: the skill belongs to the longest root that holds it.
  EXPECT_EQ(Paths(RunModuleDirs(Roots({base_, base_ + "/one"}), base_ + "/one/s")),
            (Dirs{base_ + "/one/node_modules", base_ + "/node_modules"}));
}

// Beside a root in /tmp, another local user's node_modules is never loaded (whoever may
// write a module directory runs code in every run that loads it); the same directory
// owned by the root's owner is.
TEST_F(RunModuleDirsTest, AnotherUsersDirectoryIsLeftOut) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another uid needs root";
  const std::string shared = base_ + "/node_modules";
  const auto roots = Roots({base_ + "/one"});
  ASSERT_EQ(chown(shared.c_str(), kRootOwner + 1, kRootOwner + 1), 0);
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/one/s")), Dirs{base_ + "/one/node_modules"});
  ASSERT_EQ(chown(shared.c_str(), kRootOwner, kRootOwner), 0);
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/one/s")),
            (Dirs{base_ + "/one/node_modules", shared}));
}

TEST_F(RunModuleDirsTest, ASymlinkOrAWritableDirectoryIsLeftOut) {
  const auto roots = Roots({base_ + "/one"});
  const std::string own = base_ + "/one/node_modules";
  ASSERT_EQ(chmod(own.c_str(), 0777), 0);
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/one/s")), Dirs{base_ + "/node_modules"});
  ASSERT_EQ(rmdir(own.c_str()), 0);
  ASSERT_EQ(symlink("/", own.c_str()), 0);
  EXPECT_EQ(Paths(RunModuleDirs(roots, base_ + "/one/s")), Dirs{base_ + "/node_modules"});
}

// Each directory goes to the worker with the device and inode of the directory checked,
// so that one renamed into its place afterwards is not taken for it (worker/module_dir.h).
TEST_F(RunModuleDirsTest, EachCarriesTheIdentityOfTheDirectoryChecked) {
  const auto roots = Roots({base_ + "/one"});
  const std::string own = base_ + "/one/node_modules";
  struct stat st {};
  ASSERT_EQ(lstat(own.c_str(), &st), 0);
  const std::vector<ModuleDir> dirs = RunModuleDirs(roots, base_ + "/one/s");
  ASSERT_EQ(Paths(dirs), (Dirs{own, base_ + "/node_modules"}));
  EXPECT_EQ(dirs[0].dev, static_cast<uint64_t>(st.st_dev));
  EXPECT_EQ(dirs[0].ino, static_cast<uint64_t>(st.st_ino));
  ASSERT_EQ(lstat((base_ + "/node_modules").c_str(), &st), 0);
  EXPECT_EQ(dirs[1].ino, static_cast<uint64_t>(st.st_ino));
  // Replaced after the scan: the identity is that of the directory there at this run.
  ASSERT_EQ(rename(own.c_str(), (base_ + "/one/old").c_str()), 0);
  ASSERT_EQ(mkdir(own.c_str(), 0755), 0);
  ASSERT_EQ(lstat(own.c_str(), &st), 0);
  const std::vector<ModuleDir> again = RunModuleDirs(roots, base_ + "/one/s");
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again[0].ino, static_cast<uint64_t>(st.st_ino));
  EXPECT_NE(again[0].ino, dirs[0].ino);
}

TEST_F(RunModuleDirsTest, SetHiddenRootsRecordsEachRootsOwner) {
  struct stat st {};
  ASSERT_EQ(stat((base_ + "/one").c_str(), &st), 0);
  LaunchConfig c;
  SetHiddenRoots(c, {base_ + "/one"}, {base_ + "/one/s"});
  ASSERT_EQ(c.module_roots.size(), 1u);
  EXPECT_EQ(c.module_roots[0].root_owner, st.st_uid);
  EXPECT_EQ(c.module_roots[0].dirs, (Dirs{base_ + "/one/node_modules", base_ + "/node_modules"}));
}

}  // namespace
}  // namespace skillmcp
