// Session::HoldInput: a request that waits for the broker itself (skill_run before the
// boot probe has decided) keeps every later line, and the end of input, behind it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "broker/mcp/session.h"
#include "tests/unit/mcp/answer_lines.h"

namespace skillmcp {
namespace {

class HoldInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(in_, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(out_, O_CLOEXEC | O_NONBLOCK), 0);
    session_ = std::make_unique<Session>(loop_, in_[0], out_[1]);
    session_->OnRequest("ping", [](const RpcMessage&, Reply r) { r.ResultJson("{}"); });
    // Holds the input and keeps its reply for the test to answer.
    session_->OnRequest("wait", [this](const RpcMessage&, Reply r) {
      session_->HoldInput();
      held_.push_back(r);
    });
    session_->OnClosed([this] { closed_ = true; });
    ASSERT_TRUE(session_->Start());
  }
  void TearDown() override {
    session_.reset();
    for (int fd : {in_[0], in_[1], out_[0], out_[1]})
      if (fd >= 0) close(fd);
  }
  void Write(const std::string& s) {
    ASSERT_EQ(write(in_[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void Spin() {
    for (int i = 0; i < 5; ++i) loop_.RunOnce(20);
  }
  std::vector<Json> Answers() { return testing::ReadAnswers(out_[0]); }
  EventLoop loop_;
  int in_[2]{-1, -1}, out_[2]{-1, -1};
  std::unique_ptr<Session> session_;
  std::vector<Reply> held_;
  bool closed_ = false;
};

TEST_F(HoldInputTest, LaterLinesAndTheEndOfInputWaitUntilReleased) {
  // One write: the held request, a ping behind it, then the end of input.
  Write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
  close(in_[1]);
  in_[1] = -1;
  Spin();
  ASSERT_EQ(held_.size(), 1u);
  EXPECT_TRUE(Answers().empty()) << "the ping was read past the hold";
  EXPECT_FALSE(closed_) << "the end of input was read past the hold";
  // The held request is answered, then the input goes on: its answer comes first.
  held_[0].ResultJson("{\"n\":1}");
  session_->ReleaseInput();
  Spin();
  std::vector<Json> a = Answers();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["id"], 1);
  EXPECT_EQ(a[1]["id"], 2);
  EXPECT_TRUE(closed_);
}

TEST_F(HoldInputTest, ALastLineWithoutNewlineIsAnsweredBeforeTheSessionCloses) {
  Write("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"wait\"}");
  close(in_[1]);
  in_[1] = -1;
  Spin();
  ASSERT_EQ(held_.size(), 1u);
  EXPECT_FALSE(closed_) << "the session closed under a held request";
  held_[0].ResultJson("{}");
  session_->ReleaseInput();
  Spin();
  std::vector<Json> a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], 3);
  EXPECT_TRUE(closed_);
}

TEST_F(HoldInputTest, ReleaseWithoutHoldChangesNothing) {
  session_->ReleaseInput();
  Write("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
  Spin();
  std::vector<Json> a = Answers();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["id"], 7);
  EXPECT_FALSE(session_->reading_paused());
}

}  // namespace
}  // namespace skillmcp
