#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "broker/tools/file_reader.h"
#include "broker/tools/media_type.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/surfaces.h"
#include "broker/tools/tool_definitions.h"

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
    return Json::parse(ToolResultText(r));
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
  OrderedJson payload = OrderedJson::parse(ToolResultText(r));
  for (auto& [k, v] : payload["files"][0].items()) keys.push_back(k);
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
  // Each message names its own path, so it reads right when quoted on its own.
  for (int i : {0, 1, 2, 3, 5}) {
    const std::string path = out["files"][i]["path"];
    EXPECT_NE(out["files"][i]["error"].get<std::string>().find("\"" + path + "\""),
              std::string::npos)
        << out["files"][i]["error"];
  }
}

TEST_F(ReadToolsTest, AnEmptyPathFailsTheWholeCall) {
  Json out = Call({{"name", "demo"}, {"paths", {"notes.txt", ""}}});
  EXPECT_TRUE(last_error_);
  EXPECT_EQ(out["error"], "INVALID_ARGUMENT");
  EXPECT_EQ(out["argument"], "paths");
  EXPECT_NE(out["message"].get<std::string>().find("paths[1]"), std::string::npos);
  EXPECT_FALSE(out.contains("files"));
}

TEST_F(ReadToolsTest, EntryOverOneMiBIsTruncatedWithTheRealSize) {
  Write("big.txt", std::string(1048576 + 10, 'a'));
  Json out = Call({{"name", "demo"}, {"paths", {"big.txt"}}});
  EXPECT_EQ(out["files"][0]["truncated"], true);
  EXPECT_EQ(out["files"][0]["size"], 1048586);
  EXPECT_EQ(out["files"][0]["content"].get<std::string>().size(), 1048576u);
  EXPECT_TRUE(out["files"][0].contains("truncationNote"));
}

TEST_F(ReadToolsTest, TruncationInsideAMultiByteCharacterIsBase64) {
  // The cut comes first, the text test second: 1 MiB ends after the first byte of the
  // three-byte character, so the bytes returned are not valid UTF-8.
  std::string s(1048575, 'a');
  s += "\xe2\x9c\x93";
  Write("cut.txt", s);
  Json out = Call({{"name", "demo"}, {"paths", {"cut.txt"}}});
  const Json& e = out["files"][0];
  EXPECT_EQ(e["encoding"], "base64");
  EXPECT_EQ(e["truncated"], true);
  EXPECT_EQ(e["size"], 1048578);
  EXPECT_EQ(e["mediaType"], "text/plain");
  EXPECT_EQ(e["content"], Base64(s.substr(0, 1048576)));
}

TEST_F(ReadToolsTest, TruncationOnACharacterBoundaryStaysText) {
  std::string s(1048573, 'a');
  s += "\xe2\x9c\x93";  // ends exactly at 1 MiB
  s += "tail";
  Write("cut.txt", s);
  Json out = Call({{"name", "demo"}, {"paths", {"cut.txt"}}});
  const Json& e = out["files"][0];
  EXPECT_EQ(e["encoding"], "utf-8");
  EXPECT_EQ(e["truncated"], true);
  EXPECT_EQ(e["content"], s.substr(0, 1048576));
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
  EXPECT_EQ(SurfaceResult(ok)["contents"][0]["text"], "hello");
  SurfaceAnswer bin = ResourcesRead(view_, {{"uri", "skill://demo/bin.dat"}});
  EXPECT_EQ(SurfaceResult(bin)["contents"][0]["blob"], "AAEC");
  EXPECT_NE(ResourcesRead(view_, {{"uri", "skill://demo/../demo/notes.txt"}}).error_code, 0);
  EXPECT_NE(ResourcesRead(view_, {{"uri", "skill://demo/passwd"}}).error_code, 0);
  EXPECT_NE(ResourcesRead(view_, {{"uri", "file:///etc/passwd"}}).error_code, 0);
  EXPECT_EQ(ResourcesList(view_)["resources"].size(), 2u);
}

TEST_F(ReadToolsTest, ResourceOverOneMiBGivesItsFirstMiB) {
  std::string text(1048576 + 100, 'r');
  Write("big.md", text);
  SurfaceAnswer a = ResourcesRead(view_, {{"uri", "skill://demo/big.md"}});
  ASSERT_EQ(a.error_code, 0) << a.error_message;
  const OrderedJson c = SurfaceResult(a)["contents"][0];
  EXPECT_EQ(c["mimeType"], "text/markdown");
  EXPECT_EQ(c["text"], text.substr(0, 1048576));
  // Cut inside a character: a blob, decided as skill_file decides.
  std::string cut(1048575, 'a');
  cut += "\xc3\xa9 more";
  Write("cut.md", cut);
  SurfaceAnswer b = ResourcesRead(view_, {{"uri", "skill://demo/cut.md"}});
  ASSERT_EQ(b.error_code, 0) << b.error_message;
  EXPECT_FALSE(SurfaceResult(b)["contents"][0].contains("text"));
  EXPECT_EQ(SurfaceResult(b)["contents"][0]["blob"], Base64(cut.substr(0, 1048576)));
}

TEST_F(ReadToolsTest, EveryRefusedResourceCarriesItsUri) {
  ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/passwd").c_str()), 0);
  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0755), 0);
  for (const char* uri :
       {"skill://demo/../demo/notes.txt", "skill://demo/passwd", "file:///etc/passwd",
        "skill://nope/SKILL.md", "skill://demo/missing.txt", "skill://demo/sub",
        "skill://demo", "skill://demo/%2e%2e/x", "skill://demo/"}) {
    SurfaceAnswer a = ResourcesRead(view_, {{"uri", uri}});
    EXPECT_NE(a.error_code, 0) << uri;
    ASSERT_TRUE(a.error_data.has_value()) << uri;
    EXPECT_EQ(*a.error_data, Json({{"uri", uri}})) << uri;
  }
  // No URI was requested: nothing to name.
  SurfaceAnswer none = ResourcesRead(view_, Json::object());
  EXPECT_EQ(none.error_code, -32602);
  EXPECT_FALSE(none.error_data.has_value());
}

TEST_F(ReadToolsTest, ResourceListNamesTheUriAndTitlesSkillAndPath) {
  OrderedJson list = ResourcesList(view_);
  ASSERT_EQ(list["resources"].size(), 2u);
  const OrderedJson& r = list["resources"][1];
  EXPECT_EQ(r["uri"], "skill://demo/notes.txt");
  EXPECT_EQ(r["name"], "skill://demo/notes.txt");
  EXPECT_EQ(r["title"], "demo: notes.txt");
  EXPECT_EQ(r["mimeType"], "text/plain");
}

TEST_F(ReadToolsTest, PromptTitleIsTheSkillAndDescriptionJoinsWithOneSpace) {
  Skill& s = catalogue_.skills[0];
  s.description = "Does demos.";
  s.when_to_use = "When a demo is asked for.";
  OrderedJson list = PromptsList(view_);
  const OrderedJson& p = list["prompts"][0];
  EXPECT_EQ(p["name"], "demo");
  EXPECT_EQ(p["title"], "demo");
  EXPECT_EQ(p["description"], "Does demos. When a demo is asked for.");
  EXPECT_EQ(PromptsGet(view_, {{"name", "demo"}}).result["description"],
            "Does demos. When a demo is asked for.");
  s.description.reset();
  EXPECT_EQ(PromptsList(view_)["prompts"][0]["description"], "When a demo is asked for.");
  s.description = "Only this.";
  s.when_to_use.reset();
  EXPECT_EQ(PromptsList(view_)["prompts"][0]["description"], "Only this.");
}

TEST_F(ReadToolsTest, PromptIsTheBodyVerbatim) {
  SurfaceAnswer a = PromptsGet(view_, {{"name", "demo"}});
  ASSERT_EQ(a.error_code, 0);
  EXPECT_EQ(a.result["messages"][0]["content"]["text"], "\nbody");
  EXPECT_EQ(PromptsGet(view_, {{"name", "zzz"}}).error_code, -32602);
}

std::vector<std::string> Keys(const OrderedJson& o) {
  std::vector<std::string> keys;
  for (auto& [k, v] : o.items()) keys.push_back(k);
  return keys;
}

TEST(ToolDefinitions, SchemasNameTheDialectInTheWireKeyOrder) {
  OrderedJson tools = ToolDefinitions(true)["tools"];
  ASSERT_EQ(tools.size(), 4u);
  for (const OrderedJson& t : tools) {
    const OrderedJson& schema = t["inputSchema"];
    EXPECT_EQ(schema.value("$schema", ""), "https://json-schema.org/draft/2020-12/schema")
        << t["name"];
    std::vector<std::string> want = {"type", "$schema", "properties"};
    if (t["name"] != "skill_list") want.push_back("required");
    EXPECT_EQ(Keys(schema), want) << t["name"];
  }
  EXPECT_EQ(tools[2]["inputSchema"]["required"], OrderedJson({"name", "paths"}));
  EXPECT_EQ(tools[2]["inputSchema"]["properties"]["paths"]["maxItems"], 8);
}

TEST(ToolDefinitions, AnnotationsFollowTheWire) {
  OrderedJson tools = ToolDefinitions(true)["tools"];
  for (int i = 0; i < 3; ++i) {
    const OrderedJson& a = tools[i]["annotations"];
    EXPECT_EQ(Keys(a), (std::vector<std::string>{"title", "readOnlyHint", "idempotentHint",
                                                 "openWorldHint"}));
    EXPECT_EQ(a["readOnlyHint"], true);
    EXPECT_EQ(a["idempotentHint"], true);
    EXPECT_EQ(a["openWorldHint"], false);
  }
  const OrderedJson& run = tools[3]["annotations"];
  EXPECT_EQ(tools[3]["name"], "skill_run");
  EXPECT_EQ(Keys(run), (std::vector<std::string>{"title", "readOnlyHint", "destructiveHint",
                                                 "idempotentHint", "openWorldHint"}));
  EXPECT_EQ(run["readOnlyHint"], false);
  EXPECT_EQ(run["destructiveHint"], true);
  EXPECT_EQ(run["idempotentHint"], false);
  EXPECT_EQ(run["openWorldHint"], true);
  EXPECT_EQ(ToolDefinitions(false)["tools"].size(), 3u);
}

}  // namespace
}  // namespace skillmcp
