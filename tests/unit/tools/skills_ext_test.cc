// skills/list, skills/get and resources/directory/read over a real scanned tree
// (broker/tools/skills_ext.h), and the digests they carry (skill_digest.h).
#include "broker/tools/skills_ext.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "broker/catalogue/scan.h"
#include "broker/mcp/jsonrpc.h"
#include "broker/tools/skill_digest.h"

namespace skillmcp {
namespace {

namespace fs = std::filesystem;

TEST(Sha256Digest, KnownVectors) {
  EXPECT_EQ(Sha256Digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

class SkillsExtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-ext-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& content) {
    fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }
  void Skill(const std::string& dir, const std::string& name) {
    Write(dir + "/SKILL.md", "---\nname: " + name + "\ndescription: The " + name + ".\n---\nB\n");
  }
  SkillsExtension& Ext() {
    catalogue_ = ScanCatalogue({root_}, "SKILLS_DIR");
    ext_.emplace(CatalogueView{&catalogue_, nullptr});
    return *ext_;
  }

  std::string root_;
  Catalogue catalogue_;
  std::optional<SkillsExtension> ext_;
};

TEST_F(SkillsExtTest, ListEntryCarriesFrontmatterAndEveryFileWithDigests) {
  Skill("demo", "demo");
  Write("demo/refs/deep/a.md", "alpha");
  Write("demo/bin.dat", std::string("\x00\xff\x01", 3));
  SurfaceAnswer a = Ext().List(Json::object());
  ASSERT_EQ(a.error_code, 0) << a.error_message;
  EXPECT_EQ(a.result["resultType"], "complete");
  EXPECT_EQ(a.result["ttlMs"], 0);
  EXPECT_EQ(a.result["cacheScope"], "private");
  EXPECT_FALSE(a.result.contains("nextCursor"));
  ASSERT_EQ(a.result["skills"].size(), 1u);
  const auto& s = a.result["skills"][0];
  EXPECT_EQ(s["uri"], "skill://demo/SKILL.md");
  EXPECT_EQ(s["frontmatter"], (OrderedJson{{"name", "demo"}, {"description", "The demo."}}));
  std::map<std::string, std::pair<std::string, uint64_t>> got;
  for (const auto& r : s["resources"]) got[r["uri"]] = {r["digest"], r["size"]};
  ASSERT_EQ(got.size(), 3u) << s.dump();
  EXPECT_EQ(got["skill://demo/refs/deep/a.md"].first, Sha256Digest("alpha"));
  EXPECT_EQ(got["skill://demo/refs/deep/a.md"].second, 5u);
  EXPECT_EQ(got["skill://demo/bin.dat"].first, Sha256Digest(std::string("\x00\xff\x01", 3)));
  EXPECT_EQ(got["skill://demo/SKILL.md"].second, fs::file_size(fs::path(root_) / "demo/SKILL.md"));
}

TEST_F(SkillsExtTest, GetAnswersListedSkillsOnlyAndUnknownIsInvalidParams) {
  Skill("demo", "demo");
  Skill("mismatch", "not-mismatch");
  SkillsExtension& ext = Ext();
  SurfaceAnswer ok = ext.Get(Json{{"uri", "skill://demo/SKILL.md"}});
  ASSERT_EQ(ok.error_code, 0) << ok.error_message;
  EXPECT_EQ(ok.result["skill"], ext.List(Json::object()).result["skills"][0]);
  for (const char* uri : {"skill://mismatch/SKILL.md", "skill://demo", "skill://nope/SKILL.md",
                          "skill://demo/SKILL.md/", "file:///etc/passwd"}) {
    SurfaceAnswer bad = ext.Get(Json{{"uri", uri}});
    EXPECT_EQ(bad.error_code, rpc::kInvalidParams) << uri;
    EXPECT_EQ(bad.error_data, (Json{{"uri", uri}})) << uri;
  }
  EXPECT_EQ(ext.Get(Json::object()).error_code, rpc::kInvalidParams);
  // The mismatched skill is served by the tools but not listed.
  EXPECT_EQ(ext.List(Json::object()).result["skills"].size(), 1u);
}

TEST_F(SkillsExtTest, ListPagesNeverSplitAnEntryAndCursorsRoundTrip) {
  // Three skills of 500 files each: 1024 resources per page hold two, then one.
  for (const char* n : {"a", "b", "c"}) {
    Skill(n, n);
    for (int i = 0; i < 499; ++i) Write(std::string(n) + "/f/" + std::to_string(i), "x");
  }
  SkillsExtension& ext = Ext();
  SurfaceAnswer p1 = ext.List(Json::object());
  ASSERT_EQ(p1.error_code, 0) << p1.error_message;
  ASSERT_EQ(p1.result["skills"].size(), 2u);
  ASSERT_TRUE(p1.result.contains("nextCursor"));
  SurfaceAnswer p2 = ext.List(Json{{"cursor", p1.result["nextCursor"]}});
  ASSERT_EQ(p2.error_code, 0) << p2.error_message;
  ASSERT_EQ(p2.result["skills"].size(), 1u);
  EXPECT_EQ(p2.result["skills"][0]["uri"], "skill://c/SKILL.md");
  EXPECT_EQ(p2.result["skills"][0]["resources"].size(), 500u);
  EXPECT_FALSE(p2.result.contains("nextCursor"));
  for (Json bad : {Json("bogus"), Json(3), Json("skills-page:9"), Json("skills-page:0"),
                   Json("skills-page:1x"), Json("dir-page:1")}) {
    EXPECT_EQ(ext.List(Json{{"cursor", bad}}).error_code, rpc::kInvalidParams) << bad;
  }
}

TEST_F(SkillsExtTest, DigestsAreTakenOnceAndHeld) {
  Skill("demo", "demo");
  Write("demo/notes.txt", "before");
  SkillsExtension& ext = Ext();
  auto digest_of_notes = [&](const OrderedJson& skill) {
    for (const auto& r : skill["resources"]) {
      if (r["uri"] == "skill://demo/notes.txt") return r["digest"].get<std::string>();
    }
    return std::string();
  };
  std::string first = digest_of_notes(ext.List(Json::object()).result["skills"][0]);
  EXPECT_EQ(first, Sha256Digest("before"));
  Write("demo/notes.txt", "after!");
  // The entry is the one computed first: a host verifying a read sees the change.
  EXPECT_EQ(digest_of_notes(ext.Get(Json{{"uri", "skill://demo/SKILL.md"}}).result["skill"]),
            first);
  EXPECT_EQ(digest_of_notes(ext.List(Json::object()).result["skills"][0]), first);
}

TEST_F(SkillsExtTest, AFileGoneBeforeTheFirstDigestCostsOnlyThatSkill) {
  Skill("demo", "demo");
  Write("demo/notes.txt", "x");
  Skill("other", "other");
  SkillsExtension& ext = Ext();
  fs::remove(fs::path(root_) / "demo/notes.txt");
  SurfaceAnswer get = ext.Get(Json{{"uri", "skill://demo/SKILL.md"}});
  EXPECT_EQ(get.error_code, rpc::kInternalError);
  EXPECT_NE(get.error_message.find("notes.txt"), std::string::npos) << get.error_message;
  SurfaceAnswer list = ext.List(Json::object());
  ASSERT_EQ(list.result["skills"].size(), 1u);
  EXPECT_EQ(list.result["skills"][0]["uri"], "skill://other/SKILL.md");
}

TEST_F(SkillsExtTest, DirectoryReadListsDirectChildren) {
  Skill("demo", "demo");
  Write("demo/templates/invoice.md", "i");
  Write("demo/templates/regional/eu.md", "e");
  Write("demo/templates/logo.png", "p");
  Skill("bad-name", "other");  // served by the tools: browsable too
  SkillsExtension& ext = Ext();
  SurfaceAnswer root = ext.ReadDirectory(Json{{"uri", "skill://demo"}});
  ASSERT_EQ(root.error_code, 0) << root.error_message;
  EXPECT_EQ(root.result["resultType"], "complete");
  // Manifest order: collated, SKILL.md before templates/.
  OrderedJson want_root = OrderedJson::array(
      {OrderedJson{
           {"uri", "skill://demo/SKILL.md"}, {"name", "SKILL.md"}, {"mimeType", "text/markdown"}},
       OrderedJson{{"uri", "skill://demo/templates"},
                   {"name", "templates"},
                   {"mimeType", "inode/directory"}}});
  EXPECT_EQ(root.result["resources"], want_root);
  SurfaceAnswer t = ext.ReadDirectory(Json{{"uri", "skill://demo/templates"}});
  ASSERT_EQ(t.error_code, 0);
  std::set<std::pair<std::string, std::string>> kids;
  for (const auto& r : t.result["resources"]) {
    kids.insert({r["name"].get<std::string>(), r["mimeType"].get<std::string>()});
  }
  EXPECT_EQ(kids, (std::set<std::pair<std::string, std::string>>{{"invoice.md", "text/markdown"},
                                                                 {"logo.png", "image/png"},
                                                                 {"regional", "inode/directory"}}));
  EXPECT_EQ(ext.ReadDirectory(Json{{"uri", "skill://bad-name"}}).error_code, 0);
  for (const char* uri : {"skill://demo/templates/", "skill://demo/SKILL.md", "skill://demo/nope",
                          "skill://demo/templ", "skill://none", "skill://demo/", "other://demo"}) {
    SurfaceAnswer bad = ext.ReadDirectory(Json{{"uri", uri}});
    EXPECT_EQ(bad.error_code, rpc::kInvalidParams) << uri;
  }
  EXPECT_NE(ext.ReadDirectory(Json{{"uri", "skill://demo/SKILL.md"}})
                .error_message.find("not a directory"),
            std::string::npos);
}

TEST_F(SkillsExtTest, DirectoryReadPaginates) {
  Skill("demo", "demo");
  const size_t n = kDirectoryPageSize + 3;
  for (size_t i = 0; i < n; ++i) Write("demo/many/" + std::to_string(i), "x");
  SkillsExtension& ext = Ext();
  std::set<std::string> seen;
  Json params{{"uri", "skill://demo/many"}};
  int pages = 0;
  for (;;) {
    SurfaceAnswer a = ext.ReadDirectory(params);
    ASSERT_EQ(a.error_code, 0) << a.error_message;
    ++pages;
    for (const auto& r : a.result["resources"]) seen.insert(r["uri"]);
    if (!a.result.contains("nextCursor")) break;
    params["cursor"] = a.result["nextCursor"];
  }
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(seen.size(), n);
  EXPECT_EQ(
      ext.ReadDirectory(Json{{"uri", "skill://demo/many"}, {"cursor", "skills-page:1"}}).error_code,
      rpc::kInvalidParams);
}

TEST(SkillsExtCapability, DeclaresDirectoryRead) {
  EXPECT_EQ(SkillsExtension::Capability(), (OrderedJson{{"directoryRead", true}}));
  EXPECT_STREQ(kSkillsExtensionId, "io.modelcontextprotocol/skills");
}

}  // namespace
}  // namespace skillmcp
