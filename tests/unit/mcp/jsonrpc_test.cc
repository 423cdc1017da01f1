#include "broker/mcp/jsonrpc.h"
#include "broker/mcp/line_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skillmcp {
namespace {

TEST(LineReader, SplitsLinesAcrossChunks) {
  LineReader r(100);
  std::vector<std::string> lines;
  int overflows = 0;
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  auto on_over = [&] { ++overflows; };
  r.Feed("{\"a\":1}\n{\"b\"", on_line, on_over);
  r.Feed(":2}\r\n\n", on_line, on_over);
  r.Feed("tail", on_line, on_over);
  r.Finish(on_line);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "tail"}));
  EXPECT_EQ(overflows, 0);
}

TEST(LineReader, DiscardsAnOversizedLineAndKeepsGoing) {
  LineReader r(10);
  std::vector<std::string> lines;
  int overflows = 0;
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  auto on_over = [&] { ++overflows; };
  r.Feed("0123456789AB", on_line, on_over);  // over the cap, no newline yet
  r.Feed(std::string(1000, 'x'), on_line, on_over);
  r.Feed("yy\nok\n", on_line, on_over);
  EXPECT_EQ(overflows, 1);
  EXPECT_EQ(lines, (std::vector<std::string>{"ok"}));
}

TEST(JsonRpc, ClassifiesARequest) {
  RpcMessage m = ParseRpcLine(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "ping");
}

TEST(JsonRpc, ClassifiesANotification) {
  RpcMessage m = ParseRpcLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kNotification);
}

TEST(JsonRpc, ClassifiesAResponse) {
  RpcMessage m = ParseRpcLine(R"({"jsonrpc":"2.0","id":"skill-mcp-1","result":{}})");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kResponse);
  EXPECT_EQ(m.id, "skill-mcp-1");
}

TEST(JsonRpc, ParseErrorForBrokenJson) {
  RpcMessage m = ParseRpcLine("{\"jsonrpc\":");
  EXPECT_EQ(m.kind, RpcMessage::Kind::kInvalid);
  EXPECT_EQ(m.error_code, rpc::kParseError);
  EXPECT_TRUE(m.id.is_null());
}

TEST(JsonRpc, ParseErrorForInvalidUtf8) {
  RpcMessage m = ParseRpcLine("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}");
  EXPECT_EQ(m.error_code, rpc::kParseError);
}

TEST(JsonRpc, DeepNestingRefusedBeforeParsing) {
  std::string deep(100000, '[');
  RpcMessage m = ParseRpcLine(deep);
  EXPECT_EQ(m.kind, RpcMessage::Kind::kInvalid);
  EXPECT_EQ(m.error_code, rpc::kParseError);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[","b":[{}]})"), 3u);
}

TEST(JsonRpc, InvalidRequests) {
  EXPECT_EQ(ParseRpcLine(R"({"id":1,"method":"ping"})").error_code, rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcLine(R"({"jsonrpc":"2.0","id":1,"method":5})").error_code,
            rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcLine(R"({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})").error_code,
            rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcLine(R"({"jsonrpc":"2.0","id":{},"method":"x"})").error_code,
            rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcLine("[]").error_code, rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcLine("42").error_code, rpc::kInvalidRequest);
}

TEST(JsonRpc, BatchEntriesAreClassifiedOneByOne) {
  EXPECT_TRUE(LooksLikeBatch("  [1]"));
  EXPECT_FALSE(LooksLikeBatch(R"({"a":[1]})"));
  RpcBatch b = ParseRpcBatch(
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},7])", 8);
  ASSERT_FALSE(b.refusal);
  ASSERT_EQ(b.messages.size(), 3u);
  EXPECT_EQ(b.messages[0].kind, RpcMessage::Kind::kRequest);
  EXPECT_EQ(b.messages[1].kind, RpcMessage::Kind::kNotification);
  EXPECT_EQ(b.messages[2].error_code, rpc::kInvalidRequest);
}

TEST(JsonRpc, BatchRefusedWhole) {
  EXPECT_EQ(ParseRpcBatch("[]", 8).refusal->error_code, rpc::kInvalidRequest);
  EXPECT_EQ(ParseRpcBatch("[1,", 8).refusal->error_code, rpc::kParseError);
  EXPECT_EQ(ParseRpcBatch("[1,2,3]", 2).refusal->error_code, rpc::kInvalidRequest);
  EXPECT_FALSE(ParseRpcBatch("[1,2]", 2).refusal);
}

TEST(JsonRpc, InvalidRequestKeepsAUsableId) {
  RpcMessage m = ParseRpcLine(R"({"jsonrpc":"1.0","id":9,"method":"ping"})");
  EXPECT_EQ(m.error_code, rpc::kInvalidRequest);
  EXPECT_EQ(m.id, 9);
}

TEST(JsonRpc, SerializeReplacesInvalidUtf8) {
  OrderedJson j = MakeResult(1, OrderedJson{{"text", std::string("a\xff")}});
  std::string line = SerializeLine(j);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(line.find("a\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace skillmcp
