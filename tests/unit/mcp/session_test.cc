#include "broker/mcp/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/unit/mcp/answer_lines.h"

namespace skillmcp {
namespace {

// A session over two real pipes: the test writes the client's lines and reads the
// server's answers.
class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(in_, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(out_, O_CLOEXEC | O_NONBLOCK), 0);
    session_ = std::make_unique<Session>(loop_, in_[0], out_[1]);
    session_->OnRequest("ping", [](const RpcMessage&, Reply r) { r.Result(OrderedJson::object()); });
    session_->OnRequest("later", [this](const RpcMessage&, Reply r) { held_.push_back(r); });
    session_->OnNotification("note", [this](const RpcMessage&) { ++notes_; });
    session_->OnClosed([this] { closed_ = true; });
    ASSERT_TRUE(session_->Start());
  }
  void TearDown() override {
    session_.reset();
    for (int fd : {in_[0], in_[1], out_[0], out_[1]}) close(fd);
  }
  void Send(const std::string& line) {
    ASSERT_EQ(write(in_[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
    loop_.RunOnce(100);
  }
  std::vector<Json> Answers() { return testing::ReadAnswers(out_[0]); }
  EventLoop loop_;
  int in_[2]{}, out_[2]{};
  std::unique_ptr<Session> session_;
  std::vector<Reply> held_;
  int notes_ = 0;
  bool closed_ = false;
};

TEST_F(SessionTest, AnswersARequest) {
  Send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
  auto a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], 1);
  EXPECT_TRUE(a[0]["result"].is_object());
}

TEST_F(SessionTest, UnknownMethodIsMethodNotFound) {
  Send("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"nope/probe\"}\n");
  auto a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["error"]["code"], -32601);
  EXPECT_EQ(a[0]["id"], "x");
}

TEST_F(SessionTest, NotificationsAreNeverAnswered) {
  Send("{\"jsonrpc\":\"2.0\",\"method\":\"note\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"unknown\"}\n");
  EXPECT_EQ(notes_, 1);
  EXPECT_TRUE(Answers().empty());
}

TEST_F(SessionTest, ParseErrorHasNullId) {
  Send("not json\n");
  auto a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["error"]["code"], -32700);
  EXPECT_TRUE(a[0]["id"].is_null());
}

TEST_F(SessionTest, DeferredReplyIsSentOnceAndCancelSuppressesIt) {
  Send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"later\"}\n"
       "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"later\"}\n");
  ASSERT_EQ(held_.size(), 2u);
  EXPECT_TRUE(Answers().empty());
  held_[0].Result(OrderedJson{{"n", 1}});
  held_[0].Result(OrderedJson{{"n", 2}});  // ignored
  EXPECT_TRUE(session_->CancelInFlight(6));
  held_[1].Result(OrderedJson{{"n", 3}});  // cancelled: not sent
  auto a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["result"]["n"], 1);
}

TEST_F(SessionTest, DuplicateInFlightIdIsDroppedSoTheIdGetsOneAnswer) {
  Send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"later\"}\n"
       "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"later\"}\n"
       "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n"
       "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"no/such/method\"}\n"
       "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":7}\n");
  EXPECT_TRUE(Answers().empty()) << "nothing is said under the live id, not even an error";
  ASSERT_EQ(held_.size(), 1u) << "the duplicate never reaches a handler";
  held_[0].Result(OrderedJson{{"n", 1}});
  auto a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], 5);
  EXPECT_EQ(a[0]["result"]["n"], 1);
  // Once answered, the id is free again.
  Send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n");
  a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0]["result"].is_object());
}

TEST_F(SessionTest, UnknownIdIsOmittedFromErrorsWhenTheRevisionSaysSo) {
  session_->SetOmitNullErrorId(true);
  Send("not json\n[1]\n{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n");
  auto a = Answers();
  ASSERT_EQ(a.size(), 3u);
  for (const Json& m : a) {
    EXPECT_FALSE(m.contains("id")) << m.dump();
    EXPECT_TRUE(m["error"]["code"].is_number_integer());
  }
  // A known id is still echoed.
  Send("{\"jsonrpc\":\"1.0\",\"id\":9,\"method\":\"ping\"}\n");
  a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], 9);
}

TEST_F(SessionTest, OutgoingRequestMatchesItsAnswerAndIgnoresStrangers) {
  const Json* got = nullptr;
  Json copy;
  int calls = 0;
  Json id = session_->SendRequest("elicitation/create", OrderedJson::object(), 10000,
                                  [&](const Json* result, const Json*) {
                                    ++calls;
                                    if (result) copy = *result;
                                    got = &copy;
                                  });
  auto sent = Answers();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["method"], "elicitation/create");
  Send("{\"jsonrpc\":\"2.0\",\"id\":\"skill-mcp-999\",\"result\":{\"action\":\"accept\"}}\n");
  EXPECT_EQ(calls, 0);
  Send("{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() + ",\"result\":{\"action\":\"decline\"}}\n");
  EXPECT_EQ(calls, 1);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(copy["action"], "decline");
  Send("{\"jsonrpc\":\"2.0\",\"id\":" + id.dump() + ",\"result\":{\"action\":\"accept\"}}\n");
  EXPECT_EQ(calls, 1);  // a second answer to a settled id is ignored
}

TEST_F(SessionTest, OutgoingRequestTimesOut) {
  bool timed_out = false;
  session_->SendRequest("elicitation/create", OrderedJson::object(), 20,
                        [&](const Json* result, const Json* error) {
                          timed_out = result == nullptr && error != nullptr;
                        });
  for (int i = 0; i < 20 && !timed_out; ++i) loop_.RunOnce(10);
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(session_->pending_outgoing(), 0u);
}

TEST_F(SessionTest, OversizedLineIsRefusedAndServingContinues) {
  std::string big = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"" +
                    std::string(5 * 1024 * 1024, 'a') + "\"}}\n";
  size_t off = 0;
  while (off < big.size()) {
    ssize_t w = write(in_[1], big.data() + off, std::min<size_t>(65536, big.size() - off));
    ASSERT_GT(w, 0);
    off += static_cast<size_t>(w);
    loop_.RunOnce(10);
  }
  Send("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
  auto a = Answers();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["error"]["code"], -32600);
  EXPECT_EQ(a[1]["id"], 2);
}

TEST_F(SessionTest, EofClosesTheSession) {
  close(in_[1]);
  in_[1] = -1;
  loop_.RunOnce(100);
  EXPECT_TRUE(closed_);
}

}  // namespace
}  // namespace skillmcp
