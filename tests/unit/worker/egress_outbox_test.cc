// The mirror's frames to the broker (worker/egress_outbox.h) on a real SOCK_SEQPACKET
// socketpair, the egress channel's kind: a burst the channel cannot take arrives whole and
// in order once the broker reads; the run's end waits for a broker that reads, and gives
// up on one that does not by its deadline.
#include "worker/egress_outbox.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "shared/monotonic.h"
#include "shared/unique_fd.h"

namespace skillmcp::worker {
namespace {

class EgressOutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    mirror_.reset(sv[0]);
    broker_.reset(sv[1]);
  }
  static std::string Frame(int i) { return "frame " + std::to_string(i) + std::string(200, '.'); }
  // What the broker has been sent, in order, up to `limit` frames.
  std::vector<std::string> ReadAll(size_t limit) {
    std::vector<std::string> got;
    char buf[1024];
    while (got.size() < limit) {
      const ssize_t n = recv(broker_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      got.emplace_back(buf, static_cast<size_t>(n));
    }
    return got;
  }
  UniqueFd mirror_, broker_;
};

TEST_F(EgressOutboxTest, ABurstTheChannelCannotTakeArrivesWholeAndInOrder) {
  EgressOutbox out(mirror_.get());
  constexpr int kFrames = 3000;  // far more than a socket buffer holds
  for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(out.Send(Frame(i))) << i;
  ASSERT_TRUE(out.waiting()) << "the burst should have outrun the channel";
  std::vector<std::string> got;
  for (int round = 0; round < 10000 && got.size() < kFrames; ++round) {
    std::vector<std::string> more = ReadAll(kFrames);
    got.insert(got.end(), more.begin(), more.end());
    out.Flush();  // as the mirror does when poll says the channel has room
  }
  ASSERT_EQ(got.size(), static_cast<size_t>(kFrames));
  for (int i = 0; i < kFrames; ++i) ASSERT_EQ(got[i], Frame(i));
  EXPECT_FALSE(out.waiting());
}

TEST_F(EgressOutboxTest, TheRunsEndWaitsForABrokerThatReads) {
  EgressOutbox out(mirror_.get());
  constexpr int kFrames = 2000;
  for (int i = 0; i < kFrames; ++i) ASSERT_TRUE(out.Send(Frame(i)));
  std::vector<std::string> got;
  timeval patience{5, 0};  // a frame that never comes fails the test, not hangs it
  ASSERT_EQ(setsockopt(broker_.get(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience), 0);
  std::thread broker([&] {
    char buf[1024];
    while (got.size() < kFrames) {
      const ssize_t n = recv(broker_.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      got.emplace_back(buf, static_cast<size_t>(n));
    }
  });
  EXPECT_TRUE(out.FlushBy(MonotonicMs() + 10000));
  broker.join();
  EXPECT_EQ(got.size(), static_cast<size_t>(kFrames));
}

TEST_F(EgressOutboxTest, TheRunsEndGivesUpOnABrokerThatDoesNotReadByItsDeadline) {
  EgressOutbox out(mirror_.get());
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(out.Send(Frame(i)));
  ASSERT_TRUE(out.waiting());
  const int64_t t0 = MonotonicMs();
  EXPECT_FALSE(out.FlushBy(t0 + 200));
  const int64_t took = MonotonicMs() - t0;
  EXPECT_GE(took, 190);
  EXPECT_LT(took, 2000);
}

TEST_F(EgressOutboxTest, AGoneBrokerTakesNothingMore) {
  EgressOutbox out(mirror_.get());
  broker_.reset();
  EXPECT_FALSE(out.Send(Frame(1)));
  EXPECT_FALSE(out.waiting());
  EXPECT_FALSE(out.FlushBy(MonotonicMs() + 1000));
}

TEST_F(EgressOutboxTest, TheQueueIsBounded) {
  EgressOutbox out(mirror_.get());
  size_t taken = 0;
  while (taken < 2 * kEgressOutboxMaxFrames && out.Send(Frame(static_cast<int>(taken)))) ++taken;
  EXPECT_LT(taken, 2 * kEgressOutboxMaxFrames);
  EXPECT_GE(taken, kEgressOutboxMaxFrames);
}

}  // namespace
}  // namespace skillmcp::worker
