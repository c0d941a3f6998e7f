// Concurrency: many threads on one key admit exactly LIMIT (no two take the last token), threads
// on distinct keys lose nothing, multi-limit checks that lock shards in different orders neither
// deadlock nor over-admit, and sweeping and evicting run safely beside checks.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int kThreads = 8;

template <typename Fn>
void RunThreads(int n, Fn fn) {
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      fn(t);
    });
  }
  go = true;
  for (auto& th : threads) th.join();
}

class ConcurrencyTest : public ::testing::TestWithParam<Algorithm> {
 protected:
  ManualClock clock_{0};  // stands still: nothing refills while the threads race
  Limiter limiter_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}};
};

TEST_P(ConcurrencyTest, OneKeyAdmitsExactlyTheLimit) {
  const Limit l{GetParam(), 5000, 3600 * 1000};
  std::atomic<int64_t> allowed{0};
  RunThreads(kThreads, [&](int) {
    for (int i = 0; i < 1000; ++i) allowed += limiter_.Check("", "hot", {l})->allowed;
  });
  EXPECT_EQ(allowed.load(), 5000);
}

TEST_P(ConcurrencyTest, TheSeedsExample) {
  // Limit 5, 8 parallel requests: exactly 5 pass, 3 get a positive retry-after.
  const Limit l{GetParam(), 5, 60 * 1000};
  std::atomic<int> allowed{0}, waits{0};
  RunThreads(8, [&](int) {
    const Decision d = *limiter_.Check("", "seed", {l});
    allowed += d.allowed;
    waits += !d.allowed && d.retry_after_ms > 0;
  });
  EXPECT_EQ(allowed.load(), 5);
  EXPECT_EQ(waits.load(), 3);
  EXPECT_EQ(limiter_.Check("", "other", {l})->remaining, 4);
}

TEST_P(ConcurrencyTest, DistinctKeysLoseNothing) {
  const Limit l{GetParam(), 10, 3600 * 1000};
  std::atomic<int64_t> allowed{0};
  RunThreads(kThreads, [&](int t) {
    for (int round = 0; round < 12; ++round) {
      for (int k = 0; k < 500; ++k) {
        allowed += limiter_.Check("", std::to_string(t) + ":" + std::to_string(k), {l})->allowed;
      }
    }
  });
  EXPECT_EQ(allowed.load(), int64_t{kThreads} * 500 * 10);
  EXPECT_EQ(limiter_.KeyCount(), static_cast<size_t>(kThreads) * 500);
}

INSTANTIATE_TEST_SUITE_P(All, ConcurrencyTest,
                         ::testing::Values(Algorithm::kTokenBucket, Algorithm::kGcra,
                                           Algorithm::kSlidingLog, Algorithm::kSlidingWindow,
                                           Algorithm::kFixedWindow, Algorithm::kLeakyBucket),
                         [](const auto& info) { return std::string(AlgorithmName(info.param)); });

TEST(Concurrency, MultiLimitChecksInAnyOrderAreAtomic) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.shards = 2, .sweep_interval_ms = 0, .clock = &clock});
  const Limit day{Algorithm::kFixedWindow, 3000, 24 * 3600 * 1000};
  std::vector<Limit> others;
  for (int i = 1; i <= 6; ++i) others.push_back({Algorithm::kSlidingLog, 100000, i * 1000});
  std::atomic<int64_t> allowed{0};
  RunThreads(kThreads, [&](int t) {
    // Each thread names the limits in its own order; with 2 shards they collide constantly.
    std::vector<Limit> mine = others;
    mine.insert(mine.begin() + t % 7, day);
    for (int i = 0; i < 2000; ++i) {
      allowed += limiter.Check("", std::to_string(i % 4), mine)->allowed;
    }
  });
  EXPECT_EQ(allowed.load(), 4 * 3000);
  // All or nothing: every other limit counted exactly the admitted checks.
  for (int k = 0; k < 4; ++k) {
    for (const Limit& l : others) {
      EXPECT_EQ(limiter.Peek("", std::to_string(k), {l}, 0)->remaining, 100000 - 3000);
    }
  }
}

TEST(Concurrency, SweepAndEvictionBesideChecks) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.max_keys = 2000, .sweep_interval_ms = 1, .clock = &clock});
  std::atomic<bool> done{false};
  std::thread ticker([&] {
    while (!done) {
      clock.Advance(7);
      limiter.Sweep(100);
      std::this_thread::yield();
    }
  });
  RunThreads(4, [&](int t) {
    for (int i = 0; i < 20000; ++i) {
      const Limit l{static_cast<Algorithm>(i % 6), 3, 50};
      ASSERT_TRUE(limiter.Check("", std::to_string(t * 100000 + i % 5000), {l}).ok());
    }
  });
  done = true;
  ticker.join();
  EXPECT_LE(limiter.KeyCount(), 2000u + 64);
}

}  // namespace
}  // namespace rl
