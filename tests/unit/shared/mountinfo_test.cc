#include "shared/mountinfo.h"

#include <gtest/gtest.h>

#include <string>

namespace skillmcp {
namespace {

TEST(ParseMountInfoLine, EveryField) {
  MountInfoEntry e;
  ASSERT_TRUE(ParseMountInfoLine(
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue", &e));
  EXPECT_EQ(e.mount_id, "36");
  EXPECT_EQ(e.parent_id, "35");
  EXPECT_EQ(e.major_minor, "98:0");
  EXPECT_EQ(e.root, "/mnt1");
  EXPECT_EQ(e.mount_point, "/mnt2");
  EXPECT_EQ(e.mount_options, "rw,noatime");
  EXPECT_TRUE(e.has_fs);
  EXPECT_EQ(e.fs_type, "ext3");
  EXPECT_EQ(e.source, "/dev/root");
  EXPECT_EQ(e.super_options, "rw,errors=continue");
}

TEST(ParseMountInfoLine, NoOptionalFieldsAndEscapesKept) {
  MountInfoEntry e;
  ASSERT_TRUE(
      ParseMountInfoLine("30 21 0:30 /a\\040b /srv/skills\\040a rw - tmpfs tmp\\040fs rw", &e));
  EXPECT_EQ(e.root, "/a\\040b");
  EXPECT_EQ(e.mount_point, "/srv/skills\\040a");
  EXPECT_EQ(e.mount_options, "rw");
  EXPECT_TRUE(e.has_fs);
  EXPECT_EQ(e.fs_type, "tmpfs");
  EXPECT_EQ(e.source, "tmp\\040fs");
  EXPECT_EQ(e.super_options, "rw");
  // An empty source (mount(2) with ""): three fields all the same.
  ASSERT_TRUE(ParseMountInfoLine("5 1 0:4 / /x rw - tmpfs  rw", &e));
  EXPECT_TRUE(e.has_fs);
  EXPECT_EQ(e.source, "");
  EXPECT_EQ(e.super_options, "rw");
}

TEST(ParseMountInfoLine, FiveFieldsAreALine) {
  MountInfoEntry e;
  EXPECT_FALSE(ParseMountInfoLine("", &e));
  EXPECT_FALSE(ParseMountInfoLine("30 21 0:30", &e));
  EXPECT_FALSE(ParseMountInfoLine("30 21 0:30 /", &e));
  ASSERT_TRUE(ParseMountInfoLine("30 21 0:30 / ", &e));  // the fifth is there, empty
  EXPECT_EQ(e.mount_point, "");
  ASSERT_TRUE(ParseMountInfoLine("30 21 0:30 / /a", &e));
  EXPECT_EQ(e.mount_point, "/a");
  EXPECT_EQ(e.mount_options, "");
  EXPECT_FALSE(e.has_fs);
  EXPECT_EQ(e.fs_type, "");
}

TEST(ParseMountInfoLine, TheFilesystemFollowsTheSeparatorWithThreeFields) {
  MountInfoEntry e;
  ASSERT_TRUE(ParseMountInfoLine("5 1 0:4 / /proc rw - proc proc", &e));
  EXPECT_FALSE(e.has_fs);  // two fields: not a whole line
  EXPECT_EQ(e.mount_options, "rw");
  ASSERT_TRUE(ParseMountInfoLine("5 1 0:4 / /proc rw shared:1", &e));
  EXPECT_FALSE(e.has_fs);  // no separator
  // A " - " among the first five fields is no separator.
  ASSERT_TRUE(ParseMountInfoLine("5 - 0:4 / /proc rw", &e));
  EXPECT_EQ(e.parent_id, "-");
  EXPECT_FALSE(e.has_fs);
  // Straight after the mount point: no mount options.
  ASSERT_TRUE(ParseMountInfoLine("5 1 0:4 / /proc - proc proc rw", &e));
  EXPECT_EQ(e.mount_options, "");
  EXPECT_TRUE(e.has_fs);
  EXPECT_EQ(e.fs_type, "proc");
  // A fourth field after the separator is left out of super_options.
  ASSERT_TRUE(ParseMountInfoLine("5 1 0:4 / /proc rw - proc proc rw,hidepid=2 more", &e));
  EXPECT_EQ(e.super_options, "rw,hidepid=2");
}

TEST(ParseMountInfo, TheLinesInOrderWithoutTheBadOnes) {
  const std::string text =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "broken line\n"
      "\n"
      "90 22 8:1 /tmp/x /tmp rw,relatime shared:50 - ext4 /dev/sda1 rw\n"
      "91 22 0:5 / /tmp rw - tmpfs tmpfs rw,size=10k";
  const std::vector<MountInfoEntry> all = ParseMountInfo(text);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].mount_point, "/");
  EXPECT_EQ(all[1].root, "/tmp/x");
  EXPECT_EQ(all[2].mount_id, "91");
  EXPECT_EQ(all[2].super_options, "rw,size=10k");
  EXPECT_TRUE(ParseMountInfo("").empty());
}

TEST(DecodeMountInfoField, OctalEscapes) {
  std::string out;
  EXPECT_TRUE(DecodeMountInfoField("/srv/skills\\040a\\011b\\012c\\134d", &out));
  EXPECT_EQ(out, "/srv/skills a\tb\nc\\d");
  EXPECT_TRUE(DecodeMountInfoField("", &out));
  EXPECT_EQ(out, "");
  EXPECT_TRUE(DecodeMountInfoField("\\040", &out));
  EXPECT_EQ(out, " ");
}

TEST(DecodeMountInfoField, AStrayBackslashStaysAndIsReported) {
  std::string out;
  EXPECT_FALSE(DecodeMountInfoField("/a\\04", &out));  // cut
  EXPECT_EQ(out, "/a\\04");
  EXPECT_FALSE(DecodeMountInfoField("/a\\048\\040", &out));  // 8 is no octal digit
  EXPECT_EQ(out, "/a\\048 ");
  EXPECT_FALSE(DecodeMountInfoField("\\", &out));
  EXPECT_EQ(out, "\\");
}

}  // namespace
}  // namespace skillmcp
