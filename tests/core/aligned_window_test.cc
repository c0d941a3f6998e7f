// ALIGNED_WINDOW: a fixed window on the Unix clock's grid, as envoyproxy/ratelimit counts (MONTH 30
// days, YEAR 365 days, every window a multiple of its length from the epoch). Exact values under a
// manual clock whose `now` is Unix time, through the Limiter and through a caller-held KeyState
// (rl.so's value), plus the spec text, refunds and charges, and SteadyClock's Unix anchor.
#include <chrono>

#include "gtest/gtest.h"
#include "rl/clock.h"
#include "rl/key_state.h"
#include "rl/limiter.h"

namespace rl {
namespace {

// 2023-11-14 22:13:20 UTC.
constexpr int64_t kT = 1'700'000'000'000;

class AlignedWindowTest : public ::testing::Test {
 protected:
  Decision Check(const Limit& limit, int64_t at_ms, int64_t cost = 1) {
    clock_.Set(at_ms);
    absl::StatusOr<Decision> d = limiter_.Check("", "k", {limit}, cost);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decision{};
  }

  ManualClock clock_{kT, kT};
  Limiter limiter_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}};
};

TEST_F(AlignedWindowTest, TheWindowIsTheClocksMinuteNotTheFirstRequests) {
  const Limit limit{Algorithm::kAlignedWindow, 3, 60'000};
  // kT is 20 s into its minute: the window ends 40 s later, whenever the first request came.
  Decision d = Check(limit, kT);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(d.reset_after_ms, 40'000);
  EXPECT_TRUE(Check(limit, kT + 10'000).allowed);
  d = Check(limit, kT + 39'999);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.reset_after_ms, 1);
  d = Check(limit, kT + 39'999);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 1);
  // The next minute starts at :00, with a full allowance.
  d = Check(limit, kT + 40'000);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 2);
  EXPECT_EQ(d.reset_after_ms, 60'000);
  // FIXED_WINDOW, for contrast, starts at its first request.
  EXPECT_EQ(Check(Limit{Algorithm::kFixedWindow, 3, 60'000}, kT + 40'500).reset_after_ms, 60'000);
}

// envoyproxy/ratelimit's duration_until_reset is `divider - now % divider` (seconds): the same
// window ends here, for every unit, MONTH and YEAR included.
TEST_F(AlignedWindowTest, EveryEnvoyUnitEndsWhereUpstreamsDoes) {
  const int64_t day = 86'400;
  const int64_t dividers[] = {1, 60, 3'600, day, 7 * day, 30 * day, 365 * day};
  const int64_t now_s = kT / 1000;
  for (int64_t divider : dividers) {
    SCOPED_TRACE(divider);
    const int64_t upstream_reset_s = divider - now_s % divider;
    const Decision d = Check(Limit{Algorithm::kAlignedWindow, 5, divider * 1000}, kT + 250);
    EXPECT_EQ(d.reset_after_ms, upstream_reset_s * 1000 - 250);
  }
  // Worked by hand: a WEEK starts on Thursday 00:00 UTC (the epoch's weekday), so the week of
  // kT (a Tuesday) ends Thursday 2023-11-16 00:00 UTC = 1700092800; MONTH: 30-day windows, this
  // one ends at 1700352000 (655 * 2592000 + 2592000); YEAR: 1702944000 (54 * 31536000).
  EXPECT_EQ(Check(Limit{Algorithm::kAlignedWindow, 5, 7 * day * 1000}, kT).reset_after_ms,
            int64_t{1'700'092'800 - 1'700'000'000} * 1000);
  EXPECT_EQ(Check(Limit{Algorithm::kAlignedWindow, 5, 30 * day * 1000}, kT).reset_after_ms,
            int64_t{1'700'352'000 - 1'700'000'000} * 1000);
  EXPECT_EQ(Check(Limit{Algorithm::kAlignedWindow, 5, 365 * day * 1000}, kT).reset_after_ms,
            int64_t{1'702'944'000 - 1'700'000'000} * 1000);
}

TEST_F(AlignedWindowTest, CostRefundAndCharge) {
  const Limit limit{Algorithm::kAlignedWindow, 10, 1'000};
  Decision d = Check(limit, kT + 100, 11);  // more than the window can ever hold
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, kRetryNever);
  EXPECT_EQ(Check(limit, kT + 100, 7).remaining, 3);
  clock_.Set(kT + 200);
  absl::StatusOr<Decision> r = limiter_.Refund("", "k", {limit}, 5);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->remaining, 8);
  r = limiter_.Charge("", "k", {limit}, 20);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->remaining, 0);
  d = Check(limit, kT + 999);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, 1);
  EXPECT_TRUE(Check(limit, kT + 1'000).allowed);  // a charge's debt ends with its window
  // A refund to a window that has ended gives nothing back and stores nothing.
  clock_.Set(kT + 5'000);
  r = limiter_.Refund("", "k", {limit}, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->remaining, 10);
}

TEST_F(AlignedWindowTest, AKeyStateCountsOnTheSameGrid) {
  KeyState state;
  const Limit limit{Algorithm::kAlignedWindow, 2, 60'000};
  bool changed = false;
  absl::StatusOr<Decision> d = state.Check("", {limit}, 1, kT + 5'000, &changed);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->reset_after_ms, 35'000);
  EXPECT_TRUE(state.Check("", {limit}, 1, kT + 6'000, &changed)->allowed);
  EXPECT_FALSE(state.Check("", {limit}, 1, kT + 39'999, &changed)->allowed);
  EXPECT_TRUE(state.Check("", {limit}, 1, kT + 40'000, &changed)->allowed);
}

TEST(AlignedWindowSpecTest, ParsesAndFormats) {
  std::vector<std::string_view> tokens = {"ALIGNED_WINDOW", "100", "30d", "BLOCK", "1h"};
  size_t pos = 0;
  absl::StatusOr<Limit> limit = ParseLimit(tokens, &pos);
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(*limit, (Limit{Algorithm::kAlignedWindow, 100, 30LL * 86'400'000, 0, 3'600'000}));
  EXPECT_EQ(FormatLimit(*limit), "ALIGNED_WINDOW 100 30d BLOCK 1h");
  EXPECT_EQ(ParseAlgorithm("aligned_window"), Algorithm::kAlignedWindow);
  tokens = {"ALIGNED_WINDOW", "100", "1m", "BURST", "5"};
  pos = 0;
  EXPECT_FALSE(ParseLimit(tokens, &pos).ok());  // a window has no burst
}

// The engine's `now` on the steady clock is Unix time (anchored once), which ALIGNED_WINDOW's
// grid needs; it still never goes back.
TEST(AlignedWindowClockTest, TheSteadyClockCountsUnixMilliseconds) {
  SteadyClock* clock = SteadyClock::Default();
  const int64_t a = clock->NowMs();
  const int64_t wall = clock->WallMs();
  const int64_t b = clock->NowMs();
  EXPECT_LE(a, b);
  // Only a wall-clock step between the anchor and now could part them; none is expected here.
  EXPECT_LT(std::abs(wall - b), 5'000);
}

}  // namespace
}  // namespace rl
