// The fast read path (broker/tools/json_writer, shared/json_escape, shared/base64, the
// cached lists) against an oracle: nlohmann::json's own serialisation of the same payload,
// wrapped and dumped the way every answer was before (docs/performance.md).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "broker/mcp/jsonrpc.h"
#include "broker/tools/file_reader.h"
#include "broker/tools/json_writer.h"
#include "broker/tools/media_type.h"
#include "broker/tools/read_tools.h"
#include "broker/tools/surfaces.h"
#include "shared/base64.h"
#include "shared/json_escape.h"

namespace skillmcp {
namespace {

std::string Dump(const OrderedJson& j) {
  return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// The inside of the JSON string nlohmann writes for `s` (quotes dropped).
std::string OracleEscape(const std::string& s) {
  std::string d = Dump(OrderedJson(s));
  return d.substr(1, d.size() - 2);
}

TEST(JsonEscape, EveryByteBelow0x80MatchesNlohmannAtOneAndTwoLevels) {
  for (int c = 0; c < 0x80; ++c) {
    std::string s = "a" + std::string(1, static_cast<char>(c)) + "bcdefghijklmnop" +
                    std::string(1, static_cast<char>(c));
    std::string once, twice;
    AppendJsonEscaped(&once, s, 1);
    AppendJsonEscaped(&twice, s, 2);
    EXPECT_EQ(once, OracleEscape(s)) << c;
    EXPECT_EQ(twice, OracleEscape(OracleEscape(s))) << c;
  }
}

TEST(JsonEscape, LongMixedTextMatchesNlohmann) {
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"plain words ", "\"", "\\", "\n", "\t", "\x01",
                                           "\x1f", "\x7f", "caf\xc3\xa9", "\xe2\x9c\x93",
                                           "\xf0\x9f\x98\x80", "0123456789abcdef"};
  std::string s;
  while (s.size() < 200000) s += pieces[rng() % pieces.size()];
  std::string once, twice;
  AppendJsonEscaped(&once, s, 1);
  AppendJsonEscaped(&twice, s, 2);
  EXPECT_EQ(once, OracleEscape(s));
  EXPECT_EQ(twice, OracleEscape(OracleEscape(s)));
}

TEST(JsonWriter, InvalidUtf8IsReplacedAsNlohmannDoes) {
  const std::vector<std::string> bad = {"\xff", "a\xc3", "\xc3(", "\xed\xa0\x80x",
                                        "\xf4\x90\x80\x80", "\xe2\x9c", "ok\x80\x80ok",
                                        "\xc0\xaf\"\n"};
  for (const std::string& s : bad) {
    std::string one, two;
    JsonWriter w1(&one, 1), w2(&two, 2);
    w1.String(s);
    w2.String(s);
    EXPECT_EQ(one, Dump(OrderedJson(s)));
    EXPECT_EQ(two, OracleEscape(Dump(OrderedJson(s))));
  }
}

TEST(JsonWriter, AnObjectMatchesNlohmannDumpAtBothLevels) {
  OrderedJson j;
  j["k\"ey"] = "v\n";
  j["n"] = 18446744073709551615ULL;
  j["b"] = false;
  j["a"] = OrderedJson::array({"x", true, 0});
  j["e"] = OrderedJson::object();
  std::string one, two;
  for (auto [out, levels] : {std::pair{&one, 1}, std::pair{&two, 2}}) {
    JsonWriter w(out, levels);
    w.BeginObject();
    w.Key("k\"ey");
    w.String("v\n");
    w.Key("n");
    w.Uint(18446744073709551615ULL);
    w.Key("b");
    w.Bool(false);
    w.Key("a");
    w.BeginArray();
    w.String("x");
    w.Bool(true);
    w.Raw("0");
    w.EndArray();
    w.Key("e");
    w.BeginObject();
    w.EndObject();
    w.EndObject();
  }
  EXPECT_EQ(one, Dump(j));
  EXPECT_EQ(two, OracleEscape(Dump(j)));
}

TEST(Base64, MatchesLibsodiumForEveryLengthUpTo300) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937 rng(11);
  for (size_t n = 0; n <= 300; ++n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    std::string want(sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL), '\0');
    sodium_bin2base64(want.data(), want.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                      n, sodium_base64_VARIANT_ORIGINAL);
    want.resize(want.size() - 1);
    std::string got = "prefix";
    AppendBase64(&got, bytes);
    EXPECT_EQ(got, "prefix" + want) << n;
  }
}

// A skill on disk, and the oracle: the payload built with nlohmann from the files' bytes
// by the rules of docs/wire.md §2, wrapped and dumped as every answer was before.
class ReadLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/skillmcp-rl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/demo";
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
    Skill s;
    s.name = "demo";
    s.source = dir_;
    s.root = root_;
    s.description = "A \"demo\"\twith\x01 controls";
    s.dir = UniqueFd(open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
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

  // Valid UTF-8 by nlohmann's strict serialiser, which throws on anything else.
  static bool OracleText(const std::string& bytes) {
    if (bytes.find('\0') != std::string::npos) return false;
    try {
      (void)Json(bytes).dump();
      return true;
    } catch (const Json::exception&) {
      return false;
    }
  }

  static std::string OracleBase64(const std::string& bytes) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
      uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
      for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
    }
    if (i < bytes.size()) {
      uint32_t v = uint8_t(bytes[i]) << 16;
      if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
      out += k[(v >> 18) & 63];
      out += k[(v >> 12) & 63];
      out += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
      out += '=';
    }
    return out;
  }

  OrderedJson OraclePayload(const std::vector<std::string>& paths) {
    OrderedJson files = OrderedJson::array();
    for (const std::string& p : paths) {
      std::ifstream in(dir_ + "/" + p, std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::string cut = all.substr(0, kFileEntryCap);
      bool text = OracleText(cut);
      OrderedJson e;
      e["path"] = p;
      e["size"] = all.size();
      e["mediaType"] = MediaTypeForPath(p);
      e["encoding"] = text ? "utf-8" : "base64";
      e["truncated"] = all.size() > kFileEntryCap;
      if (all.size() > kFileEntryCap) {
        e["truncationNote"] = "the file is " + std::to_string(all.size()) +
                              " bytes; only the first 1048576 bytes are returned";
      }
      e["content"] = text ? cut : OracleBase64(cut);
      files.push_back(e);
    }
    OrderedJson out;
    out["skill"] = "demo";
    out["files"] = files;
    return out;
  }

  static std::string OracleLine(const OrderedJson& payload, bool is_error) {
    OrderedJson block;
    block["type"] = "text";
    block["text"] = Dump(payload);
    OrderedJson result;
    result["content"] = OrderedJson::array({block});
    if (is_error) result["isError"] = true;
    return SerializeLine(MakeResult(Json(42), result));
  }

  static std::string FastLine(ToolResult r) {
    JsonParts parts = ToolResultJson(std::move(r));
    return ResultLineHead(Json(42)) + parts.head + parts.body + parts.tail +
           std::string(kResultLineTail);
  }

  std::string FileLine(const std::vector<std::string>& paths) {
    return FastLine(SkillFile(view_, {{"name", "demo"}, {"paths", paths}}));
  }

  std::string root_, dir_;
  Catalogue catalogue_;
  GrantDecision grants_;
  CatalogueView view_;
};

TEST_F(ReadLineTest, TextWithEveryControlCharacterIsExact) {
  std::string text;
  for (int c = 1; c < 0x80; ++c) text += static_cast<char>(c);
  text += "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \"\\\"";
  Write("all.txt", text);
  EXPECT_EQ(FileLine({"all.txt"}), OracleLine(OraclePayload({"all.txt"}), false));
}

TEST_F(ReadLineTest, InvalidUtf8AndNulAreBase64AndExact) {
  Write("bad.txt", "abc\xff\xfe def");
  Write("nul.txt", std::string("a\0b", 3));
  Write("surrogate.txt", "\xed\xa0\x80");
  std::vector<std::string> paths = {"bad.txt", "nul.txt", "surrogate.txt"};
  const std::string line = FileLine(paths);
  EXPECT_EQ(line, OracleLine(OraclePayload(paths), false));
  EXPECT_NE(line.find(R"(\"encoding\":\"base64\",\"truncated\":false,\"content\":\"YWJj//4gZGVm\")"),
            std::string::npos);
}

TEST_F(ReadLineTest, TruncationAtOneMiBIsExact) {
  std::string big(kFileEntryCap + 10, 'x');
  big[100] = '"';
  big[200] = '\n';
  Write("big.md", big);
  const std::string line = FileLine({"big.md"});
  EXPECT_EQ(line, OracleLine(OraclePayload({"big.md"}), false));
  EXPECT_NE(line.find(R"(\"truncated\":true)"), std::string::npos);
}

TEST_F(ReadLineTest, ACutInsideAMultibyteCharacterMakesBase64) {
  // U+2713 (3 bytes) starts one byte before the cap: the cut keeps its first byte only.
  std::string big(kFileEntryCap - 1, 'a');
  big += "\xe2\x9c\x93 tail";
  Write("cut.md", big);
  const std::string line = FileLine({"cut.md"});
  EXPECT_EQ(line, OracleLine(OraclePayload({"cut.md"}), false));
  EXPECT_NE(line.find(R"(\"encoding\":\"base64\",\"truncated\":true)"), std::string::npos);
}

TEST_F(ReadLineTest, TheFourMiBBudgetIsExactAtItsEdge) {
  std::vector<std::string> paths;
  for (int i = 0; i < 4; ++i) {
    std::string data(kFileEntryCap + 5, static_cast<char>('a' + i));
    data[7] = static_cast<char>(0x80);  // binary: base64
    if (i % 2 == 0) data = std::string(kFileEntryCap, static_cast<char>('a' + i));
    Write("f" + std::to_string(i) + ".txt", data);
    paths.push_back("f" + std::to_string(i) + ".txt");
  }
  // Four entries counted at 1 MiB each: exactly the budget, served.
  EXPECT_EQ(FileLine(paths), OracleLine(OraclePayload(paths), false));
  // A fifth byte over it: the whole call is refused, before any read.
  Write("one.txt", "x");
  paths.push_back("one.txt");
  ToolResult r = SkillFile(view_, {{"name", "demo"}, {"paths", paths}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(Json::parse(ToolResultText(r))["error"], "CALL_BUDGET_EXCEEDED");
  EXPECT_EQ(FastLine(r), OracleLine(r.payload, true));
}

TEST_F(ReadLineTest, ErrorEntriesAndBinaryInRequestOrderAreExact) {
  Write("bin.dat", std::string("\x00\x01\x02\xff", 4));
  Write("notes.txt", "hello\r\n");
  std::vector<std::string> paths = {"missing", "bin.dat", "../x", "notes.txt"};
  OrderedJson want = OraclePayload({"bin.dat", "notes.txt"});
  OrderedJson files = OrderedJson::array();
  const std::string line = FileLine(paths);
  // The error entries' wording is the code's own; take it from the answer, and hold
  // every other byte to the oracle.
  OrderedJson got = OrderedJson::parse(
      Json::parse(line)["result"]["content"][0]["text"].get<std::string>());
  files.push_back(got["files"][0]);
  files.push_back(want["files"][0]);
  files.push_back(got["files"][2]);
  files.push_back(want["files"][1]);
  EXPECT_EQ(got["files"][0].size(), 2u);
  want["files"] = files;
  EXPECT_EQ(line, OracleLine(want, false));
}

TEST_F(ReadLineTest, TheCachedSkillListIsTheOraclesBytesEveryTime) {
  ToolResult first = SkillList(view_);
  ToolResult second = SkillList(view_);
  EXPECT_EQ(first.text, second.text);
  OrderedJson payload = OrderedJson::parse(ToolResultText(first));
  EXPECT_EQ(payload["skills"][0]["description"], "A \"demo\"\twith\x01 controls");
  EXPECT_EQ(FastLine(first), OracleLine(payload, false));
}

// The catalogue is fixed after boot, so skill_list is serialised once and every copy of
// the view answers from the same text.
TEST_F(ReadLineTest, SkillListIsBuiltOncePerCatalogueView) {
  CatalogueView copy = view_;
  const std::string first = SkillList(view_).text;
  catalogue_.problems.push_back(Problem{"/x", "declaration", "added after the first call"});
  EXPECT_EQ(SkillList(copy).text, first);
  CatalogueView fresh{&catalogue_, &grants_};
  EXPECT_NE(SkillList(fresh).text, first);
}

// resources/read: {contents: [{uri, mimeType, text | blob}]}, the first MiB, text by the
// same rule as skill_file.
TEST_F(ReadLineTest, ResourcesReadIsTheOraclesBytes) {
  std::string text;
  for (int c = 1; c < 0x80; ++c) text += static_cast<char>(c);
  Write("t.md", text + "caf\xc3\xa9");
  Write("b.bin", "\xff\x00\x01");
  std::string cut(kFileEntryCap - 1, 'a');
  Write("cut.md", cut + "\xe2\x9c\x93");
  for (const std::string p : {"t.md", "b.bin", "cut.md"}) {
    const std::string uri = "skill://demo/" + p;
    SurfaceAnswer a = ResourcesRead(view_, {{"uri", uri}});
    ASSERT_EQ(a.error_code, 0) << a.error_message;
    std::ifstream in(dir_ + "/" + p, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string first = all.substr(0, kFileEntryCap);
    OrderedJson entry{{"uri", uri}, {"mimeType", MediaTypeForPath(p)}};
    if (OracleText(first)) {
      entry["text"] = first;
    } else {
      entry["blob"] = OracleBase64(first);
    }
    OrderedJson want{{"contents", OrderedJson::array({entry})}};
    EXPECT_EQ(ResultLineHead(Json("r")) + a.result_json + std::string(kResultLineTail),
              SerializeLine(MakeResult(Json("r"), want)))
        << p;
  }
}

TEST_F(ReadLineTest, APayloadToolResultIsWrappedExactly) {
  ToolResult r = Refusal("X", "a \"message\"\n\x02 caf\xc3\xa9 bad\xff");
  EXPECT_EQ(FastLine(r), OracleLine(r.payload, true));
}

}  // namespace
}  // namespace skillmcp
