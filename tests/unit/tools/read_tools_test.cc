#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "broker/tools/file_reader.h"
#include "broker/tools/media_type.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/surfaces.h"

namespace skillmcp {
namespace {

TEST(MediaType, ByLastExtensionLowerCased) {
  EXPECT_STREQ(MediaTypeForPath("SKILL.md"), "text/markdown");
  EXPECT_STREQ(MediaTypeForPath("a/b.tar.JSON"), "application/json");
  EXPECT_STREQ(MediaTypeForPath("x.yml"), "application/yaml");
  EXPECT_STREQ(MediaTypeForPath("x.mjs"), "text/javascript");
  EXPECT_STREQ(MediaTypeForPath("x.JPEG"), "image/jpeg");
  EXPECT_STREQ(MediaTypeForPath("x.svg"), "image/svg+xml");
  EXPECT_STREQ(MediaTypeForPath("Makefile"), "application/octet-stream");
  EXPECT_STREQ(MediaTypeForPath("dir.md/noext"), "application/octet-stream");
  EXPECT_STREQ(MediaTypeForPath("trailing."), "application/octet-stream");
}

TEST(IsText, NulAndInvalidUtf8AreBinary) {
  EXPECT_TRUE(IsText("hello \xe2\x9c\x93"));
  EXPECT_FALSE(IsText(std::string("a\0b", 3)));
  EXPECT_FALSE(IsText("\xff\xfe"));
  EXPECT_FALSE(IsText("\xed\xa0\x80"));  // a UTF-16 surrogate encoded in UTF-8
}

class ReadToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-rt-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/demo";
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
    Write("SKILL.md", "---\nname: demo\n---\nbody");
    Write("notes.txt", "hello");
    Write("bin.dat", std::string("\x00\x01\x02", 3));
    Skill s;
    s.name = "demo";
    s.source = dir_;
    s.dir = UniqueFd(open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    s.body = "\nbody";
    s.files = {{"SKILL.md", 24}, {"notes.txt", 5}};
    catalogue_.roots = {root_};
    catalogue_.roots_from = "SKILLS_DIR";
    catalogue_.skills.push_back(std::move(s));
    grants_ = DecideGrants(catalogue_, std::nullopt, false);
    view_ = CatalogueView{&catalogue_, &grants_};
  }
  void TearDown() override { std::error_code ec; std::filesystem::remove_all(root_, ec); }
  void Write(const std::string& rel, const std::string& data) {
    std::ofstream(dir_ + "/" + rel, std::ios::binary) << data;
  }
  void Sparse(const std::string& rel, off_t size) {
    int fd = open((dir_ + "/" + rel).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, size), 0);
    close(fd);
  }
  Json Call(const Json& args) {
    ToolResult r = SkillFile(view_, args);
    last_error_ = r.is_error;
    return Json::parse(r.payload.dump());
  }
  std::string root_, dir_;
  Catalogue catalogue_;
  GrantDecision grants_;
  CatalogueView view_;
  bool last_error_ = false;
};

TEST_F(ReadToolsTest, TextAndBinaryEntriesInRequestOrder) {
  Json out = Call({{"name", "demo"}, {"paths", {"bin.dat", "notes.txt"}}});
  ASSERT_FALSE(last_error_);
  EXPECT_EQ(out["skill"], "demo");
  ASSERT_EQ(out["files"].size(), 2u);
  EXPECT_EQ(out["files"][0]["path"], "bin.dat");
  EXPECT_EQ(out["files"][0]["encoding"], "base64");
  EXPECT_EQ(out["files"][0]["content"], "AAEC");
  EXPECT_EQ(out["files"][0]["mediaType"], "application/octet-stream");
  EXPECT_EQ(out["files"][1]["encoding"], "utf-8");
  EXPECT_EQ(out["files"][1]["content"], "hello");
  EXPECT_EQ(out["files"][1]["size"], 5);
  EXPECT_EQ(out["files"][1]["truncated"], false);
}

TEST_F(ReadToolsTest, EntryKeyOrderFollowsTheWire) {
  ToolResult r = SkillFile(view_, {{"name", "demo"}, {"paths", {"notes.txt"}}});
  std::vector<std::string> keys;
  for (auto& [k, v] : r.payload["files"][0].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"path", "size", "mediaType", "encoding",
                                            "truncated", "content"}));
}

TEST_F(ReadToolsTest, OneBadPathFailsOnlyItsEntry) {
  ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/passwd").c_str()), 0);
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0644), 0);
  Json out = Call({{"name", "demo"},
                   {"paths", {"../x", "passwd", "fifo", "missing", "notes.txt", "%2e%2e/x"}}});
  ASSERT_FALSE(last_error_);
  ASSERT_EQ(out["files"].size(), 6u);
  for (int i : {0, 1, 2, 3, 5}) {
    EXPECT_TRUE(out["files"][i].contains("error")) << i;
    EXPECT_FALSE(out["files"][i].contains("content")) << i;
  }
  EXPECT_EQ(out["files"][4]["content"], "hello");
}

TEST_F(ReadToolsTest, EntryOverOneMiBIsTruncatedWithTheRealSize) {
  Write("big.txt", std::string(1048576 + 10, 'a'));
  Json out = Call({{"name", "demo"}, {"paths", {"big.txt"}}});
  EXPECT_EQ(out["files"][0]["truncated"], true);
  EXPECT_EQ(out["files"][0]["size"], 1048586);
  EXPECT_EQ(out["files"][0]["content"].get<std::string>().size(), 1048576u);
  EXPECT_TRUE(out["files"][0].contains("truncationNote"));
}

TEST_F(ReadToolsTest, TruncationInsideAMultiByteCharacterStaysText) {
  std::string s(1048575, 'a');
  s += "\xe2\x9c\x93";  // crosses the 1 MiB line
  Write("cut.txt", s);
  Json out = Call({{"name", "demo"}, {"paths", {"cut.txt"}}});
  EXPECT_EQ(out["files"][0]["encoding"], "utf-8");
  EXPECT_EQ(out["files"][0]["content"].get<std::string>().size(), 1048575u);
}

TEST_F(ReadToolsTest, SparseHugeFileIsNeverReadWhole) {
  Sparse("huge.bin", off_t{256} << 20);
  Json out = Call({{"name", "demo"}, {"paths", {"huge.bin"}}});
  EXPECT_EQ(out["files"][0]["truncated"], true);
  EXPECT_EQ(out["files"][0]["size"], 268435456);
}

TEST_F(ReadToolsTest, CallBudgetIsSummedBeforeAnyRead) {
  for (int i = 0; i < 5; ++i) Sparse("s" + std::to_string(i), 2 << 20);
  Json out = Call({{"name", "demo"}, {"paths", {"s0", "s1", "s2", "s3", "s4"}}});
  EXPECT_TRUE(last_error_);
  EXPECT_EQ(out["error"], "CALL_BUDGET_EXCEEDED");
  // Four capped entries fit exactly (4 x 1 MiB).
  Call({{"name", "demo"}, {"paths", {"s0", "s1", "s2", "s3"}}});
  EXPECT_FALSE(last_error_);
}

TEST_F(ReadToolsTest, ArgumentErrorsNameTheArgument) {
  Json out = Call({{"name", "demo"}, {"paths", Json::array()}});
  EXPECT_TRUE(last_error_);
  EXPECT_EQ(out["argument"], "paths");
  out = Call({{"name", "demo"}, {"paths", {"1", "2", "3", "4", "5", "6", "7", "8", "9"}}});
  EXPECT_TRUE(last_error_);
  EXPECT_EQ(out["argument"], "paths");
  out = Call({{"name", 5}, {"paths", {"a"}}});
  EXPECT_EQ(out["argument"], "name");
  out = Call({{"name", "demo"}, {"paths", {1}}});
  EXPECT_EQ(out["argument"], "paths");
  out = Call({{"name", "demo"}});
  EXPECT_EQ(out["argument"], "paths");
}

TEST_F(ReadToolsTest, UnknownSkillIsAnError) {
  Json out = Call({{"name", "nope"}, {"paths", {"a"}}});
  EXPECT_TRUE(last_error_);
  EXPECT_EQ(out["error"], "UNKNOWN_SKILL");
}

TEST_F(ReadToolsTest, LoadReturnsBodyAndManifest) {
  ToolResult r = SkillLoad(view_, {{"name", "demo"}});
  ASSERT_FALSE(r.is_error);
  EXPECT_EQ(r.payload["body"], "\nbody");
  EXPECT_EQ(r.payload["files"].size(), 2u);
  EXPECT_EQ(r.payload["truncated"], false);
  EXPECT_TRUE(SkillLoad(view_, {{"name", ""}}).is_error);
}

TEST_F(ReadToolsTest, ResourcesUseTheSameContainment) {
  ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/passwd").c_str()), 0);
  SurfaceAnswer ok = ResourcesRead(view_, {{"uri", "skill://demo/notes.txt"}});
  ASSERT_EQ(ok.error_code, 0);
  EXPECT_EQ(ok.result["contents"][0]["text"], "hello");
  SurfaceAnswer bin = ResourcesRead(view_, {{"uri", "skill://demo/bin.dat"}});
  EXPECT_EQ(bin.result["contents"][0]["blob"], "AAEC");
  EXPECT_NE(ResourcesRead(view_, {{"uri", "skill://demo/../demo/notes.txt"}}).error_code, 0);
  EXPECT_NE(ResourcesRead(view_, {{"uri", "skill://demo/passwd"}}).error_code, 0);
  EXPECT_NE(ResourcesRead(view_, {{"uri", "file:///etc/passwd"}}).error_code, 0);
  EXPECT_EQ(ResourcesList(view_)["resources"].size(), 2u);
}

TEST_F(ReadToolsTest, PromptIsTheBodyVerbatim) {
  SurfaceAnswer a = PromptsGet(view_, {{"name", "demo"}});
  ASSERT_EQ(a.error_code, 0);
  EXPECT_EQ(a.result["messages"][0]["content"]["text"], "\nbody");
  EXPECT_EQ(PromptsGet(view_, {{"name", "zzz"}}).error_code, -32602);
}

}  // namespace
}  // namespace skillmcp
