// Limiter behaviour beyond single algorithms: several limits in one check (all or nothing, binding
// limit, separate states), peek, reset, validation, edge cases (idle years, huge values, a clock
// that stands still, changed limits), expiry, sweeping and eviction at the key bound.
#include "rl/limiter.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "step.h"

namespace rl {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kDay = 24 * 60 * kMinute;
constexpr int64_t kYear = 365 * kDay;

const Algorithm kAll[] = {Algorithm::kTokenBucket, Algorithm::kGcra,
                          Algorithm::kSlidingLog,  Algorithm::kSlidingWindow,
                          Algorithm::kFixedWindow, Algorithm::kLeakyBucket};

class LimiterTest : public ::testing::Test {
 protected:
  LimiterTest() : limiter_(Options()) {}
  LimiterOptions Options() { return LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}; }
  Decision Check(const std::vector<Limit>& limits, int64_t cost = 1, std::string_view key = "k") {
    absl::StatusOr<Decision> d = limiter_.Check("", key, limits, cost);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decision{};
  }
  Decision Peek(const std::vector<Limit>& limits, int64_t cost = 1, std::string_view key = "k") {
    absl::StatusOr<Decision> d = limiter_.Peek("", key, limits, cost);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decision{};
  }

  ManualClock clock_{1000};
  Limiter limiter_;
};

TEST_F(LimiterTest, SeveralLimitsAreAllOrNothing) {
  const Limit minute{Algorithm::kFixedWindow, 5, kMinute};
  const Limit day{Algorithm::kFixedWindow, 3, kDay};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Check({minute, day}).allowed);
  const Decision d = Check({minute, day});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.binding, 1);
  EXPECT_EQ(d.limit, 3);
  EXPECT_EQ(d.retry_after_ms, kDay);
  EXPECT_EQ(d.count, 2);
  EXPECT_TRUE(d.limits[0].allowed);
  EXPECT_FALSE(d.limits[1].allowed);
  // The denied check consumed nothing from the minute window.
  EXPECT_EQ(Peek({minute}, 0).remaining, 2);
}

// A Decision built by a caller holds default results in every entry; the engine's decisions
// specify only the first `count` (it skips filling the rest), each entry that limit's own.
TEST_F(LimiterTest, DecisionEntriesPastCountAreOnlyDefaultedByCallers) {
  Decision fresh{};
  fresh.limits[kMaxLimitsPerCheck - 1].remaining = 7;  // the whole array is writable
  const Decision copy = fresh;
  for (size_t i = 0; i + 1 < kMaxLimitsPerCheck; ++i) {
    EXPECT_TRUE(copy.limits[i].allowed);
    EXPECT_EQ(copy.limits[i].limit, 0);
    EXPECT_EQ(copy.limits[i].remaining, 0);
  }
  EXPECT_EQ(copy.limits[kMaxLimitsPerCheck - 1].remaining, 7);
  EXPECT_EQ(copy.limits.size(), kMaxLimitsPerCheck);

  const Limit minute{Algorithm::kTokenBucket, 10, kMinute};
  const Limit hour{Algorithm::kFixedWindow, 50, 60 * kMinute};
  const Limit day{Algorithm::kSlidingWindow, 500, kDay};
  const Decision d = Check({minute, hour, day}, 2);
  ASSERT_EQ(d.count, 3);
  const int64_t limits[] = {10, 50, 500}, windows[] = {kMinute, 60 * kMinute, kDay};
  for (size_t i = 0; i < d.count; ++i) {
    EXPECT_TRUE(d.limits[i].allowed);
    EXPECT_EQ(d.limits[i].limit, limits[i]);
    EXPECT_EQ(d.limits[i].window_ms, windows[i]);
    EXPECT_EQ(d.limits[i].remaining, limits[i] - 2);
  }
}

TEST_F(LimiterTest, EachLimitHasItsOwnStateAndIsReused) {
  const Limit minute{Algorithm::kTokenBucket, 100, kMinute};
  const Limit day{Algorithm::kTokenBucket, 5000, kDay};
  EXPECT_TRUE(Check({minute, day}, 10).allowed);
  EXPECT_EQ(limiter_.KeyCount(), 2u);
  const Decision d = Check({minute});
  EXPECT_EQ(d.remaining, 89);
  EXPECT_EQ(Check({day}, 0).remaining, 4990);
  // Same algorithm and window on another key or scope: independent.
  EXPECT_EQ(Check({minute}, 0, "other").remaining, 100);
  EXPECT_EQ(limiter_.Check("scope", "k", {minute}, 0)->remaining, 100);
}

TEST_F(LimiterTest, BindingLimit) {
  const Limit a{Algorithm::kFixedWindow, 10, kMinute};
  const Limit b{Algorithm::kSlidingLog, 4, kSecond};
  Decision d = Check({a, b}, 2);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.binding, 1);  // least remaining
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(d.limit, 4);
  d = Check({a, b}, 3);  // both would fit only a
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.binding, 1);
  EXPECT_EQ(d.retry_after_ms, kSecond);
  d = Check({a, b}, 5);  // b can never hold 5: never wins
  EXPECT_EQ(d.binding, 1);
  EXPECT_EQ(d.retry_after_ms, kRetryNever);
  // Denied by both: the longer wait binds.
  const Limit c{Algorithm::kFixedWindow, 4, kDay};
  EXPECT_TRUE(Check({c}, 3).allowed);
  d = Check({a, b, c}, 3);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.binding, 2);
  EXPECT_EQ(d.retry_after_ms, kDay);
}

TEST_F(LimiterTest, LeakyBucketDelayShowsWhenAnotherLimitBinds) {
  const Limit shape{Algorithm::kLeakyBucket, 10, kSecond, 5};
  const Limit cap{Algorithm::kFixedWindow, 3, kMinute};
  EXPECT_EQ(Check({shape, cap}).retry_after_ms, 0);
  const Decision d = Check({shape, cap});
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.binding, 1);
  EXPECT_EQ(d.retry_after_ms, 100);
}

TEST_F(LimiterTest, PeekChangesNothing) {
  for (Algorithm a : kAll) {
    const Limit l{a, 5, kSecond};
    EXPECT_TRUE(Check({l}, 3).allowed);
    const Decision before = Peek({l}, 2);
    for (int i = 0; i < 10; ++i) {
      const Decision p = Peek({l}, 2);
      EXPECT_EQ(p.allowed, before.allowed);
      EXPECT_EQ(p.remaining, before.remaining);
    }
    const Decision after = Check({l}, 2);
    EXPECT_EQ(after.allowed, before.allowed) << AlgorithmName(a);
    EXPECT_EQ(after.remaining, before.remaining);
    EXPECT_EQ(after.retry_after_ms, before.retry_after_ms);
    EXPECT_EQ(after.reset_after_ms, before.reset_after_ms);
  }
}

TEST_F(LimiterTest, CostZeroAndNewKeysStoreNothing) {
  for (Algorithm a : kAll) {
    const Decision d = Check({{a, 7, kSecond}}, 0);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.remaining, 7);
    EXPECT_EQ(d.reset_after_ms, 0);
  }
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

TEST_F(LimiterTest, CostAboveCapacityIsNeverAndChangesNothing) {
  for (Algorithm a : kAll) {
    const Limit l{a, 5, kSecond};
    EXPECT_TRUE(Check({l}, 2).allowed);
    const Decision d = Check({l}, 6);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after_ms, kRetryNever) << AlgorithmName(a);
    EXPECT_EQ(Peek({l}, 0).remaining, 3) << AlgorithmName(a);
  }
  // Burst raises the capacity of bucket algorithms; the others refuse it, as the spec parser
  // does (one validator).
  EXPECT_TRUE(Check({{Algorithm::kGcra, 5, kSecond, 8}}, 8, "b").allowed);
  for (Algorithm a : {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindow}) {
    EXPECT_FALSE(limiter_.Check("", "b", {Limit{a, 5, kSecond, 8}}, 1).ok()) << AlgorithmName(a);
  }
}

TEST_F(LimiterTest, InvalidInputIsAnError) {
  const Limit ok{Algorithm::kTokenBucket, 5, kSecond};
  auto code = [&](std::vector<Limit> limits, int64_t cost = 1) {
    return limiter_.Check("", "k", limits, cost).status();
  };
  EXPECT_TRUE(absl::IsInvalidArgument(code({})));
  EXPECT_TRUE(absl::IsInvalidArgument(code(std::vector<Limit>(9, ok))));
  EXPECT_TRUE(absl::IsInvalidArgument(code({ok}, -1)));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{Algorithm::kGcra, 0, kSecond}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{Algorithm::kGcra, kMaxLimit + 1, kSecond}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{Algorithm::kGcra, 1, 0}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{Algorithm::kGcra, 1, kMaxWindowMs + 1}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{Algorithm::kGcra, 1, kSecond, -1}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({{static_cast<Algorithm>(9), 1, kSecond}})));
  EXPECT_TRUE(absl::IsInvalidArgument(code({ok, {Algorithm::kTokenBucket, 9, kSecond}})));
  EXPECT_FALSE(code({ok}, -1).message().empty());
  EXPECT_TRUE(limiter_.Peek("", "k", {}, 1).status().code() == absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

TEST_F(LimiterTest, ResetRemovesStates) {
  const Limit a{Algorithm::kSlidingLog, 2, kMinute};
  const Limit b{Algorithm::kGcra, 2, kMinute};
  EXPECT_TRUE(Check({a, b}, 2).allowed);
  EXPECT_FALSE(Check({a, b}).allowed);
  EXPECT_EQ(limiter_.Reset("", "k", std::vector<Limit>{a, b}), 2u);
  EXPECT_EQ(limiter_.Reset("", "k", std::vector<Limit>{a, b}), 0u);
  EXPECT_TRUE(Check({a, b}, 2).allowed);
  EXPECT_EQ(limiter_.KeyCount(), 2u);
}

TEST_F(LimiterTest, PolicyStateLivesUnderItsName) {
  Policy p{"api", {{Algorithm::kFixedWindow, 2, kMinute}}};
  EXPECT_TRUE(limiter_.Check(p, "u", 2)->allowed);
  EXPECT_FALSE(limiter_.Check(p, "u")->allowed);
  EXPECT_FALSE(limiter_.Check("api", "u", p.limits)->allowed);
  p.name = "api2";  // renamed: starts clean
  EXPECT_TRUE(limiter_.Check(p, "u")->allowed);
}

TEST_F(LimiterTest, ClockStandingStillAdmitsExactlyTheLimit) {
  for (Algorithm a : kAll) {
    int allowed = 0;
    for (int i = 0; i < 1000; ++i) allowed += Check({{a, 37, kMinute}}, 1, "still").allowed;
    EXPECT_EQ(allowed, 37) << AlgorithmName(a);
    limiter_.Reset("", "still", std::vector<Limit>{{a, 37, kMinute}});
  }
}

TEST_F(LimiterTest, YearsIdleAndHugeValuesStayInRange) {
  for (Algorithm a : kAll) {
    // BURST only where the algorithm takes one.
    const int64_t burst = internal::HasBurst(a) ? kMaxLimit : 0;
    for (const Limit& l : {Limit{a, kMaxLimit, kMaxWindowMs, burst}, Limit{a, 1, kMaxWindowMs},
                           Limit{a, kMaxLimit, 1}, Limit{a, 1, 1, burst}}) {
      SCOPED_TRACE(FormatLimit(l));
      for (int64_t cost : {int64_t{1}, kMaxLimit / 2, kMaxLimit, kMaxLimit + 1}) {
        for (int64_t step : {int64_t{0}, int64_t{1}, kYear, 10 * kYear}) {
          clock_.Advance(step);
          absl::StatusOr<Decision> d = limiter_.Check("", "huge", {l}, cost);
          ASSERT_TRUE(d.ok());
          EXPECT_GE(d->remaining, 0);
          EXPECT_LE(d->remaining, l.capacity());
          EXPECT_GE(d->retry_after_ms, kRetryNever);
          EXPECT_GE(d->reset_after_ms, 0);
          if (cost > l.capacity() || (a != Algorithm::kTokenBucket && a != Algorithm::kGcra &&
                                      a != Algorithm::kLeakyBucket && cost > l.limit)) {
            EXPECT_EQ(d->retry_after_ms, kRetryNever);
          }
        }
      }
    }
  }
}

TEST_F(LimiterTest, FullAgainAfterAYearIdle) {
  for (Algorithm a : kAll) {
    const Limit l{a, 1000, kDay};
    EXPECT_TRUE(Check({l}, 1000, "idle").allowed);
    clock_.Advance(kYear);
    const Decision d = Check({l}, 0, "idle");
    EXPECT_EQ(d.remaining, 1000) << AlgorithmName(a);
    EXPECT_EQ(d.reset_after_ms, 0);
  }
  // Everything was fresh-equivalent: the peeks dropped the states.
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

TEST_F(LimiterTest, ChangingLimitsBetweenCalls) {
  // Token bucket drained at 10/s, then read as 5/s: empty, refills at the new rate.
  EXPECT_TRUE(Check({{Algorithm::kTokenBucket, 10, kSecond}}, 10).allowed);
  Decision d = Check({{Algorithm::kTokenBucket, 5, kSecond}});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 200);
  // Raised to 20/s with burst 40: still empty now, full after 2 s.
  d = Check({{Algorithm::kTokenBucket, 20, kSecond, 40}}, 0);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.reset_after_ms, 2000);
  // A burst big enough to shift the token units rescales instead of misreading them.
  d = Check({{Algorithm::kTokenBucket, 20, kSecond, kMaxLimit}}, 0);
  EXPECT_EQ(d.remaining, 0);
  // Fixed window counted 8 of 10, then the limit drops to 5: denied, nothing negative.
  EXPECT_TRUE(Check({{Algorithm::kFixedWindow, 10, kMinute}}, 8).allowed);
  d = Check({{Algorithm::kFixedWindow, 5, kMinute}});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, kMinute);
  // Sliding log lowered below what it holds: denied until enough runs leave.
  EXPECT_TRUE(Check({{Algorithm::kSlidingLog, 10, kMinute}}, 6).allowed);
  d = Check({{Algorithm::kSlidingLog, 3, kMinute}});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, kMinute);
}

TEST_F(LimiterTest, SweepRemovesExpiredStates) {
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i);
    Check({{kAll[i % 6], 10, kSecond}}, 1, key);
    if (i % 3 == 0) Check({{Algorithm::kFixedWindow, 10, kDay}}, 1, key);
  }
  EXPECT_EQ(limiter_.KeyCount(), 400u);
  EXPECT_EQ(limiter_.Sweep(), 0u);  // nothing expired yet
  clock_.Advance(3 * kSecond);      // past every 1 s state plus the sweep's ~1 s granularity
  EXPECT_EQ(limiter_.Sweep(7), 7u);
  EXPECT_EQ(limiter_.Sweep(), 293u);
  EXPECT_EQ(limiter_.KeyCount(), 100u);  // the day windows stay
  EXPECT_EQ(limiter_.Stats().expired, 300u);
}

TEST(LimiterBoundTest, EvictsAtTheKeyBound) {
  ManualClock clock(0);
  Limiter limiter(
      LimiterOptions{.shards = 4, .max_keys = 1000, .sweep_interval_ms = 0, .clock = &clock});
  const Limit soon{Algorithm::kTokenBucket, 10, kSecond};
  const Limit late{Algorithm::kFixedWindow, 10, kDay};
  for (int i = 0; i < 200; ++i) (void)limiter.Check("", "late" + std::to_string(i), {late});
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(limiter.Check("", "soon" + std::to_string(i), {soon}).ok());
    ASSERT_LE(limiter.KeyCount(), 1000u + 4);
  }
  const LimiterStats stats = limiter.Stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_LE(stats.keys, 1004u);
  // The states closest to expiry went first: the day windows survive.
  int kept = 0;
  for (int i = 0; i < 200; ++i) {
    kept += limiter.Check("", "late" + std::to_string(i), {late}, 0)->remaining == 9;
  }
  EXPECT_EQ(kept, 200);
  // Once the short states have expired, making room removes them as expired, not evicted.
  clock.Advance(10 * kSecond);
  for (int i = 0; i < 100; ++i) (void)limiter.Check("", "new" + std::to_string(i), {soon});
  EXPECT_EQ(limiter.Stats().evictions, stats.evictions);
  EXPECT_GT(limiter.Stats().expired, 0u);
}

TEST(LimiterBoundTest, MemoryBoundAndBackgroundSweeper) {
  Limiter limiter(LimiterOptions{.max_memory_bytes = 64 * 1000, .sweep_interval_ms = 5});
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(limiter.Check("", std::to_string(i), {{Algorithm::kGcra, 5, kMinute}}).ok());
  }
  EXPECT_LE(limiter.KeyCount(), 1000u + 1);
  EXPECT_GT(limiter.Stats().evictions, 0u);
  EXPECT_GT(limiter.Stats().memory_bytes, 0u);
  // The destructor stops and joins the sweeper thread.
}

TEST(LimiterBoundTest, BackgroundSweeperRemovesExpiredStates) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 1, .clock = &clock});
  for (int i = 0; i < 100; ++i) {
    (void)limiter.Check("", std::to_string(i), {{Algorithm::kGcra, 5, kSecond}});
  }
  EXPECT_EQ(limiter.KeyCount(), 100u);
  clock.Advance(3 * kSecond);
  // The sweeper runs every ms of real time; give it up to 10 s on a loaded machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (limiter.KeyCount() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(limiter.KeyCount(), 0u);
  EXPECT_EQ(limiter.Stats().expired, 100u);
}

}  // namespace
}  // namespace rl

namespace rl {
namespace {

// Issue 14: a shadow policy never denies in-process either; the Decision says it would have.
TEST(LimiterShadowTest, ShadowPolicyAllowsAndReportsTheDenial) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock});
  absl::StatusOr<Policy> trial = ParsePolicy("trial", "GCRA 2 1m SHADOW");
  ASSERT_TRUE(trial.ok());
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Decision> d = limiter.Check(*trial, "t1");
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->allowed);
    EXPECT_FALSE(d->shadow_denied);
  }
  absl::StatusOr<Decision> third = limiter.Check(*trial, "t1");
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->allowed);
  EXPECT_TRUE(third->shadow_denied);
  EXPECT_EQ(third->retry_after_ms, 0);
  EXPECT_EQ(third->remaining, 0);
  EXPECT_TRUE(limiter.Peek(*trial, "t1")->shadow_denied);
  // The same limits without SHADOW deny: the state is the policy's, shared by name.
  Policy strict = *trial;
  strict.shadow = false;
  EXPECT_FALSE(limiter.Check(strict, "t1")->allowed);
  EXPECT_EQ(limiter.Reset(strict, "t1"), 1u);
}

}  // namespace
}  // namespace rl
