// broker/mcp/late_catalogue.h and its use by McpServer: `initialize` is answered before the
// catalogue is scanned; every request that reads the catalogue finds it loaded, even one
// that arrives in the same write as `initialize`; the scan runs once.
#include "broker/mcp/late_catalogue.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "broker/mcp/server.h"
#include "broker/mcp/session.h"
#include "tests/unit/mcp/answer_lines.h"

namespace skillmcp {
namespace {

constexpr const char* kInitialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
    "\n";
constexpr const char* kSkillList =
    R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"skill_list","arguments":{}}})"
    "\n";

TEST(LateCatalogue, EnsureLoadsOnceAndThenRunsInOrder) {
  EventLoop loop;
  int loads = 0;
  std::vector<int> order;
  LateCatalogue late(loop, [&loads] { ++loads; });
  late.Then([&order] { order.push_back(1); });
  late.Then([&order] { order.push_back(2); });
  EXPECT_EQ(loads, 0);
  late.Ensure();
  late.Ensure();
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  late.Then([&order] { order.push_back(3); });  // already loaded: at once
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  late.Soon();
  loop.RunOnce(0);
  EXPECT_EQ(loads, 1);
}

TEST(LateCatalogue, AThenDuringTheLoadWaitsForItsEnd) {
  EventLoop loop;
  bool loaded = false, then_saw_loaded = false;
  LateCatalogue* self = nullptr;
  LateCatalogue late(loop, [&] {
    self->Ensure();  // re-entrant: nothing
    self->Then([&] { then_saw_loaded = loaded; });
    loaded = true;
  });
  self = &late;
  late.Ensure();
  EXPECT_TRUE(late.loaded());
  EXPECT_TRUE(then_saw_loaded) << "a Then() queued during the load ran before it ended";
}

TEST(LateCatalogue, SoonLoadsOnTheNextTurnNotAtOnce) {
  EventLoop loop;
  int loads = 0;
  LateCatalogue late(loop, [&loads] { ++loads; });
  late.Soon();
  EXPECT_EQ(loads, 0);
  loop.RunOnce(0);
  EXPECT_EQ(loads, 1);
}

TEST(LateCatalogue, AnIdleBrokerScansAnyway) {
  EventLoop loop;
  int loads = 0;
  LateCatalogue late(loop, [&loads] { ++loads; });
  late.Start();
  const auto t0 = std::chrono::steady_clock::now();
  while (loads == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    loop.RunOnce(100);
  EXPECT_EQ(loads, 1);
}

TEST(LateCatalogue, DestroyedBeforeItsTimerLeavesNothingBehind) {
  EventLoop loop;
  int loads = 0;
  {
    LateCatalogue late(loop, [&loads] { ++loads; });
    late.Soon();
  }
  loop.RunOnce(0);
  EXPECT_EQ(loads, 0);
}

// A server wired as serve.cc wires it, whose "scan" adds one problem and notes whether
// the initialize answer had already been written when it ran.
class LateServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(in_, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(out_, O_CLOEXEC | O_NONBLOCK), 0);
    session_ = std::make_unique<Session>(loop_, in_[0], out_[1]);
    late_ = std::make_unique<LateCatalogue>(loop_, [this] {
      ++loads_;
      answered_before_scan_ = !ReadOutput().empty();
      catalogue_.problems.push_back(Problem{"/skills/x", "scanned", "the late scan ran"});
    });
    server_ =
        std::make_unique<McpServer>(*session_, CatalogueView{&catalogue_, &grants_}, "1", nullptr);
    server_->SetLateCatalogue(late_.get());
    server_->Register();
    ASSERT_TRUE(session_->Start());
  }
  void TearDown() override {
    server_.reset();
    late_.reset();
    session_.reset();
    for (int fd : {in_[0], in_[1], out_[0], out_[1]})
      if (fd >= 0) close(fd);
  }
  void Write(const std::string& s) {
    ASSERT_EQ(write(in_[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void Spin() {
    for (int i = 0; i < 5; ++i) loop_.RunOnce(10);
  }
  std::string ReadOutput() {
    testing::ReadAvailable(out_[0], &output_);
    return output_;
  }
  std::vector<Json> Answers() { return testing::ParseLines(ReadOutput()); }

  EventLoop loop_;
  int in_[2]{-1, -1}, out_[2]{-1, -1};
  Catalogue catalogue_;
  GrantDecision grants_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<LateCatalogue> late_;
  std::unique_ptr<McpServer> server_;
  std::string output_;
  int loads_ = 0;
  bool answered_before_scan_ = false;
};

TEST_F(LateServerTest, InitializeIsAnsweredBeforeTheScan) {
  Write(kInitialize);
  Spin();
  EXPECT_EQ(loads_, 1) << "answering initialize schedules the scan";
  EXPECT_TRUE(answered_before_scan_) << "the initialize answer waited for the scan";
}

TEST_F(LateServerTest, ARequestInTheSameWriteFindsTheCatalogueLoaded) {
  Write(std::string(kInitialize) + kSkillList);
  Spin();
  std::vector<Json> a = Answers();
  ASSERT_EQ(a.size(), 2u);
  const Json list = Json::parse(a[1]["result"]["content"][0]["text"].get<std::string>());
  ASSERT_EQ(list["problems"].size(), 1u) << list.dump();
  EXPECT_EQ(list["problems"][0]["reason"], "scanned");
  EXPECT_EQ(loads_, 1);
}

TEST_F(LateServerTest, PingAndToolsListDoNotScan) {
  Write(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
        "\n"
        R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
        "\n");
  loop_.RunOnce(0);
  EXPECT_EQ(Answers().size(), 2u);
  EXPECT_EQ(loads_, 0);
  Write(R"({"jsonrpc":"2.0","id":3,"method":"prompts/list"})"
        "\n");
  loop_.RunOnce(0);
  EXPECT_EQ(loads_, 1);
}

}  // namespace
}  // namespace skillmcp
