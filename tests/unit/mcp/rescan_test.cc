// broker/mcp/rescan.h with a real loop and a real thread: a burst of changes costs one
// job after the quiet moment, changes during a job queue exactly one more, the loop keeps
// turning while a job runs, and the result is applied on the loop's thread.
#include "broker/mcp/rescan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace skillmcp {
namespace {

// Turns the loop until `done` or `ms` pass.
template <typename Done>
void TurnUntil(EventLoop& loop, Done done, int64_t ms) {
  const int64_t end = EventLoop::NowMs() + ms;
  while (!done() && EventLoop::NowMs() < end) loop.RunOnce(10);
}

TEST(Rescan, ABurstCostsOneJobAfterTheQuietMoment) {
  EventLoop loop;
  std::atomic<int> jobs{0};
  int applied = 0;
  Rescan rescan(loop, [&]() -> std::function<void()> {
    ++jobs;
    return [&applied] { ++applied; };
  });
  ASSERT_TRUE(rescan.Open());
  for (int i = 0; i < 1000; ++i) rescan.Changed();
  EXPECT_EQ(jobs.load(), 0) << "nothing runs before the quiet moment";
  TurnUntil(
      loop, [&] { return applied == 1; }, 3000);
  EXPECT_EQ(jobs.load(), 1);
  EXPECT_EQ(applied, 1);
  TurnUntil(
      loop, [] { return false; }, kRescanQuietMs + 100);
  EXPECT_EQ(jobs.load(), 1) << "no change, no second job";
}

TEST(Rescan, ChangesDuringAJobQueueOneMoreAndTheLoopKeepsTurning) {
  EventLoop loop;
  std::atomic<bool> release{false};
  std::atomic<int> jobs{0};
  int applied = 0;
  Rescan rescan(loop, [&]() -> std::function<void()> {
    if (++jobs == 1) {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return [&applied] { ++applied; };
  });
  ASSERT_TRUE(rescan.Open());
  rescan.Changed();
  TurnUntil(
      loop, [&] { return jobs.load() == 1; }, 3000);
  ASSERT_EQ(jobs.load(), 1);
  // The job holds; the loop still fires its timers meanwhile.
  bool ticked = false;
  loop.AddTimer(20, [&ticked] { ticked = true; });
  for (int i = 0; i < 1000; ++i) rescan.Changed();
  TurnUntil(
      loop, [&] { return ticked; }, 1000);
  EXPECT_TRUE(ticked);
  EXPECT_EQ(applied, 0);
  release = true;
  TurnUntil(
      loop, [&] { return applied == 2; }, 5000);
  EXPECT_EQ(jobs.load(), 2) << "one job queued behind the running one, whatever came";
  EXPECT_EQ(applied, 2);
  EXPECT_TRUE(rescan.idle());
}

TEST(Rescan, AStreamThatNeverGoesQuietIsStillScanned) {
  EventLoop loop;
  std::atomic<int> jobs{0};
  Rescan rescan(loop, [&]() -> std::function<void()> {
    ++jobs;
    return nullptr;
  });
  ASSERT_TRUE(rescan.Open());
  const int64_t end = EventLoop::NowMs() + kRescanMaxWaitMs + 500;
  while (EventLoop::NowMs() < end) {
    rescan.Changed();
    loop.RunOnce(kRescanQuietMs / 3);
  }
  EXPECT_GE(jobs.load(), 1);
}

}  // namespace
}  // namespace skillmcp
