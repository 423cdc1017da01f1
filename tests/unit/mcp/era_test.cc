// broker/mcp/era.h: what a request's _meta says, and the fields of a 2026 result
// (docs/wire.md §8).
#include "broker/mcp/era.h"

#include <gtest/gtest.h>

namespace skillmcp {
namespace {

Json Params(Json meta) { return Json{{"name", "x"}, {"_meta", std::move(meta)}}; }

TEST(ReadEnvelope, NoVersionKeyIsA2025Request) {
  EXPECT_EQ(ReadEnvelope(Json()).kind, Envelope::Kind::kNone);
  EXPECT_EQ(ReadEnvelope(Json::array()).kind, Envelope::Kind::kNone);
  EXPECT_EQ(ReadEnvelope(Json{{"name", "x"}}).kind, Envelope::Kind::kNone);
  EXPECT_EQ(ReadEnvelope(Json{{"_meta", "text"}}).kind, Envelope::Kind::kNone);
  EXPECT_EQ(ReadEnvelope(Params({{"progressToken", 1}})).kind, Envelope::Kind::kNone);
}

TEST(ReadEnvelope, The2026EnvelopeNeedsObjectCapabilities) {
  Envelope e = ReadEnvelope(
      Params({{std::string(kProtocolVersionKey), "2026-07-28"},
              {std::string(kClientCapabilitiesKey), {{"elicitation", Json::object()}}}}));
  EXPECT_EQ(e.kind, Envelope::Kind::kModern);
  EXPECT_TRUE(e.capabilities.contains("elicitation"));
  for (Json caps : {Json(), Json::array(), Json("x")}) {
    Json meta = {{std::string(kProtocolVersionKey), "2026-07-28"}};
    if (!caps.is_null()) meta[std::string(kClientCapabilitiesKey)] = caps;
    Envelope bad = ReadEnvelope(Params(meta));
    EXPECT_EQ(bad.kind, Envelope::Kind::kMalformed) << caps.dump();
    EXPECT_FALSE(bad.problem.empty());
  }
}

TEST(ReadEnvelope, OtherVersionsAreUnsupportedAndNonStringsMalformed) {
  Envelope e = ReadEnvelope(Params({{std::string(kProtocolVersionKey), "2025-11-25"},
                                    {std::string(kClientCapabilitiesKey), Json::object()}}));
  EXPECT_EQ(e.kind, Envelope::Kind::kUnsupported);
  EXPECT_EQ(e.requested, "2025-11-25");
  EXPECT_EQ(ReadEnvelope(Params({{std::string(kProtocolVersionKey), 20260728}})).kind,
            Envelope::Kind::kMalformed);
  EXPECT_EQ(ReadEnvelope(Params({{std::string(kProtocolVersionKey), nullptr}})).kind,
            Envelope::Kind::kMalformed);
}

TEST(CacheTtl, ListsForAnHourReadsNeverOthersNone) {
  EXPECT_EQ(CacheTtlMs("tools/list"), 3600000);
  EXPECT_EQ(CacheTtlMs("server/discover"), 3600000);
  // The live catalogue: a list may change at any moment, and nothing would say so.
  EXPECT_EQ(CacheTtlMs("prompts/list", true), 0);
  EXPECT_EQ(CacheTtlMs("server/discover", true), 3600000);
  EXPECT_EQ(CacheTtlMs("resources/read"), 0);
  EXPECT_EQ(CacheTtlMs("tools/call"), std::nullopt);
  EXPECT_EQ(CacheTtlMs("skills/list"), std::nullopt);  // the extension writes its own
  // ... but not for resources/directory/read, whose 2025 answer has no cache hints.
  EXPECT_EQ(CacheTtlMs("resources/directory/read"), 0);
  EXPECT_TRUE(WritesOwnResultType("skills/get"));
  EXPECT_FALSE(WritesOwnResultType("tools/list"));
}

TEST(ResultStamp, FieldsInOrderAndPrependedOnce) {
  Json info = {{"name", "skill-mcp"}, {"version", "1"}};
  std::string f = ResultStampFields("complete", 0, info);
  EXPECT_EQ(f,
            R"("resultType":"complete","ttlMs":0,"cacheScope":"private",)"
            R"("_meta":{"io.modelcontextprotocol/serverInfo":{"name":"skill-mcp","version":"1"}})");
  EXPECT_EQ(ResultStampFields("", std::nullopt, info).rfind(R"("_meta":)", 0), 0u);
  EXPECT_EQ(PrependFields(R"("a":1)", "{}"), R"({"a":1})");
  EXPECT_EQ(PrependFields(R"("a":1)", R"({"b":2})"), R"({"a":1,"b":2})");
  EXPECT_EQ(PrependFields(R"("a":1)", "[]"), "[]");  // not an object: untouched
  Json parsed = Json::parse(PrependFields(f, R"({"tools":[]})"));
  EXPECT_EQ(parsed["resultType"], "complete");
  EXPECT_TRUE(parsed["tools"].is_array());
}

}  // namespace
}  // namespace skillmcp
