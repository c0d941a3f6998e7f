// Refunds and settle-later charges (Limiter::Refund / Limiter::Charge): hand-worked exact values
// per algorithm under a manual clock, debt and its repayment, refunds that never exceed a fresh
// state, a check refunded at once leaving nothing behind, bad input that changes nothing, and
// arithmetic that survives huge and repeated amounts.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;

struct Answer {
  bool allowed;
  int64_t remaining;
  int64_t retry_after_ms;
  int64_t reset_after_ms;
};

class RefundChargeTest : public ::testing::Test {
 protected:
  Answer Of(const absl::StatusOr<Decision>& d) {
    EXPECT_TRUE(d.ok()) << d.status();
    if (!d.ok()) return {};
    return {d->allowed, d->remaining, d->retry_after_ms, d->reset_after_ms};
  }
  Answer Check(const Limit& l, int64_t cost = 1) { return Of(limiter_.Check("", "k", {l}, cost)); }
  Answer Peek(const Limit& l, int64_t cost = 0) { return Of(limiter_.Peek("", "k", {l}, cost)); }
  Answer Refund(const Limit& l, int64_t n) { return Of(limiter_.Refund("", "k", {l}, n)); }
  Answer Charge(const Limit& l, int64_t n) { return Of(limiter_.Charge("", "k", {l}, n)); }

  ManualClock clock_{0};
  Limiter limiter_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}};
};

void ExpectAnswer(const Answer& got, const Answer& want, const std::string& what) {
  EXPECT_EQ(got.allowed, want.allowed) << what;
  EXPECT_EQ(got.remaining, want.remaining) << what;
  EXPECT_EQ(got.retry_after_ms, want.retry_after_ms) << what;
  EXPECT_EQ(got.reset_after_ms, want.reset_after_ms) << what;
}

// 10 per second = one token per 100 ms, bucket of 10. Token bucket and GCRA answer alike.
TEST_F(RefundChargeTest, BucketsRefundUpToFullAndChargeIntoDebt) {
  for (Algorithm a : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    const Limit l{a, 10, kSecond};
    const std::string name(AlgorithmName(a));
    clock_.Set(0);
    limiter_.Reset("", "k", {Limit{Algorithm::kTokenBucket, 10, kSecond}, l});
    ExpectAnswer(Check(l, 8), {true, 2, 0, 800}, name + " check 8");
    ExpectAnswer(Refund(l, 3), {true, 5, 0, 500}, name + " refund 3");
    ExpectAnswer(Refund(l, 100), {true, 10, 0, 0}, name + " refund beyond capacity");
    EXPECT_EQ(limiter_.KeyCount(), 0u) << name << ": a full bucket is fresh, nothing is kept";
    // 25 from a full bucket of 10: 15 in debt, repaid after 1.5 s; full after 2.5 s.
    ExpectAnswer(Charge(l, 25), {false, 0, 1500, 2500}, name + " charge 25");
    ExpectAnswer(Peek(l), {false, 0, 1500, 2500}, name + " peek in debt");
    clock_.Set(1499);
    ExpectAnswer(Check(l), {false, 0, 101, 1001}, name + " still in debt");
    clock_.Set(1500);
    ExpectAnswer(Check(l), {false, 0, 100, 1000}, name + " repaid, one token short");
    clock_.Set(1600);
    ExpectAnswer(Check(l), {true, 0, 0, 1000}, name + " passes");
    // A refund pays a debt back first.
    ExpectAnswer(Charge(l, 20), {false, 0, 2000, 3000}, name + " charge 20");
    ExpectAnswer(Refund(l, 5), {false, 0, 1500, 2500}, name + " refund 5 of the debt");
    ExpectAnswer(Refund(l, 17), {true, 2, 0, 800}, name + " refund past the debt");
  }
}

// A rate that does not divide the window: the debt is repaid to the exact millisecond.
TEST_F(RefundChargeTest, DebtIsExactForAnyRate) {
  for (Algorithm a : {Algorithm::kTokenBucket, Algorithm::kGcra}) {
    const Limit l{a, 3, kSecond};  // one token per 333.33 ms
    const std::string name(AlgorithmName(a));
    clock_.Set(0);
    limiter_.Reset("", "k", {l});
    ExpectAnswer(Charge(l, 4), {false, 0, 334, 1334}, name);  // 1 token short: 333.3 ms
    clock_.Set(333);
    ExpectAnswer(Check(l), {false, 0, 334, 1001}, name);  // (1 + 1/3 token) * 333.3 ms = 333.67
    clock_.Set(666);
    EXPECT_FALSE(Check(l).allowed) << name;
    clock_.Set(667);
    EXPECT_TRUE(Check(l).allowed) << name;
  }
}

TEST_F(RefundChargeTest, FixedWindow) {
  const Limit l{Algorithm::kFixedWindow, 5, kMinute};
  for (int i = 0; i < 3; ++i) Check(l);
  ExpectAnswer(Refund(l, 2), {true, 4, 0, kMinute}, "refund 2");
  ExpectAnswer(Refund(l, 10), {true, 5, 0, 0}, "refund beyond the count");
  EXPECT_EQ(limiter_.KeyCount(), 0u);
  // A charge on no window starts one: 7 of 5, denied until it ends.
  clock_.Set(1000);
  ExpectAnswer(Charge(l, 7), {false, 0, kMinute, kMinute}, "charge 7");
  clock_.Set(1000 + kMinute - 1);
  ExpectAnswer(Check(l), {false, 0, 1, 1}, "debt until the window ends");
  clock_.Set(1000 + kMinute);
  ExpectAnswer(Check(l), {true, 4, 0, kMinute}, "a new window");
}

TEST_F(RefundChargeTest, SlidingWindowTakesFromTheCurrentWindowFirst) {
  const Limit l{Algorithm::kSlidingWindow, 10, kMinute};
  Check(l, 4);
  ExpectAnswer(Refund(l, 1), {true, 7, 0, 2 * kMinute}, "refund 1");
  // 13 of 10 in this window: in the next one its weight must fade to 10 - 0: the first ms
  // where 13 * (60000 - e) <= 600000 is e = 13847.
  ExpectAnswer(Charge(l, 10), {false, 0, kMinute + 13847, 2 * kMinute}, "charge 10");
  clock_.Set(kMinute + 13846);
  EXPECT_FALSE(Check(l).allowed);
  clock_.Set(kMinute + 13847);
  EXPECT_TRUE(Peek(l, 0).allowed);
  // Next window: the previous count is 13, this one 0; a refund of 5 comes out of the previous.
  clock_.Set(kMinute);
  ExpectAnswer(Refund(l, 5), {true, 2, 0, kMinute}, "refund from the previous window");
}

TEST_F(RefundChargeTest, SlidingLogDropsItsNewestRequests) {
  const Limit l{Algorithm::kSlidingLog, 5, 10 * kSecond};
  Check(l);
  clock_.Set(100);
  Check(l);
  clock_.Set(200);
  Check(l, 2);
  // 3 back: the run of 2 at 200 ms and one of the run at 100 ms; what is left leaves at 10 s.
  ExpectAnswer(Refund(l, 3), {true, 4, 0, 9800}, "refund 3");
  ExpectAnswer(Refund(l, 5), {true, 5, 0, 0}, "refund everything");
  EXPECT_EQ(limiter_.KeyCount(), 0u);
  clock_.Set(300);
  ExpectAnswer(Charge(l, 8), {false, 0, 10 * kSecond, 10 * kSecond}, "charge 8 of 5");
  clock_.Set(300 + 10 * kSecond - 1);
  EXPECT_FALSE(Check(l).allowed);
  clock_.Set(300 + 10 * kSecond);
  ExpectAnswer(Check(l), {true, 4, 0, 10 * kSecond}, "the charge has left the window");
}

TEST_F(RefundChargeTest, LeakyBucketChargesButRefusesRefunds) {
  const Limit l{Algorithm::kLeakyBucket, 10, kSecond, 5};  // queue of 5, drains 10/s
  // A charge joins the queue: the next caller waits behind it.
  ExpectAnswer(Charge(l, 3), {true, 2, 300, 300}, "charge 3");
  ExpectAnswer(Check(l), {true, 1, 300, 400}, "queued behind the charge");
  const absl::StatusOr<Decision> refund = limiter_.Refund("", "k", {l}, 1);
  ASSERT_FALSE(refund.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(refund.status()));
  EXPECT_NE(refund.status().message().find("LEAKY_BUCKET cannot refund"), absl::string_view::npos)
      << refund.status();
  ExpectAnswer(Peek(l), {true, 1, 400, 400}, "the refused refund changed nothing");
}

TEST_F(RefundChargeTest, SeveralLimitsAllTakeTheAdjustment) {
  const Limit minute{Algorithm::kTokenBucket, 100, kMinute};
  const Limit day{Algorithm::kFixedWindow, 1000, 24 * 60 * kMinute};
  ASSERT_TRUE(limiter_.Check("", "k", {minute, day}, 50)->allowed);
  const Decision charged = *limiter_.Charge("", "k", {minute, day}, 70);
  EXPECT_FALSE(charged.allowed);  // the minute bucket is 20 in debt
  EXPECT_EQ(charged.binding, 0);
  EXPECT_EQ(charged.limits[1].remaining, 880);
  const Decision refunded = *limiter_.Refund("", "k", {minute, day}, 30);
  EXPECT_TRUE(refunded.allowed);
  EXPECT_EQ(refunded.limits[0].remaining, 10);
  EXPECT_EQ(refunded.limits[1].remaining, 910);
}

TEST_F(RefundChargeTest, PoliciesAndShadow) {
  const Policy api = *ParsePolicy("api", "GCRA 10 1m");
  ASSERT_TRUE(limiter_.Check(api, "k", 4).ok());
  EXPECT_EQ(limiter_.Refund(api, "k", 2)->remaining, 8);
  EXPECT_EQ(limiter_.Peek("api", "k", api.limits, 0)->remaining, 8) << "the policy's own state";
  const Policy trial = *ParsePolicy("trial", "GCRA 10 1m SHADOW");
  const Decision d = *limiter_.Charge(trial, "k", 15);
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.shadow_denied);
  EXPECT_FALSE(limiter_.Peek("trial", "k", trial.limits, 0)->allowed) << "the charge applied";
}

TEST_F(RefundChargeTest, BadInputIsAnErrorAndChangesNothing) {
  const Limit l{Algorithm::kTokenBucket, 10, kSecond};
  Check(l, 4);
  const Answer before = Peek(l);
  auto expect_error = [&](absl::StatusOr<Decision> d, std::string_view text) {
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(d.status()));
    EXPECT_NE(std::string(d.status().message()).find(text), std::string::npos) << d.status();
  };
  expect_error(limiter_.Refund("", "k", {l}, -1), "COST must not be negative");
  expect_error(limiter_.Charge("", "k", {l}, -5), "COST must not be negative");
  expect_error(limiter_.Charge("", "k", {l}, kMaxLimit + 1), "COST must be at most 1099511627776");
  expect_error(limiter_.Refund("", "k", {l, Limit{Algorithm::kConcurrency, 3, kSecond}}, 1),
               "CONCURRENCY takes no REFUND");
  expect_error(limiter_.Charge("", "k", {l, Limit{Algorithm::kGcra, 0, kSecond}}, 1),
               "limit must be between");
  expect_error(limiter_.Charge("", "k", {}, 1), "missing limit");
  ExpectAnswer(Peek(l), before, "unchanged");
  // Zero changes nothing either, and answers like a peek.
  ExpectAnswer(Refund(l, 0), before, "refund 0");
  ExpectAnswer(Charge(l, 0), before, "charge 0");
}

const Algorithm kRefundable[] = {Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kSlidingLog,
                                 Algorithm::kSlidingWindow, Algorithm::kFixedWindow};

// Random checks, refunds and charges: a refund never leaves more than a fresh state holds, and
// a check refunded in the same millisecond leaves the state as it was.
TEST_F(RefundChargeTest, RefundsNeverExceedCapacityAndUndoACheck) {
  std::mt19937_64 rng(1606);
  for (int round = 0; round < 60; ++round) {
    const Algorithm a = kRefundable[round % 5];
    Limit l{a, 1 + static_cast<int64_t>(rng() % 20), 1 + static_cast<int64_t>(rng() % 5000)};
    if (a == Algorithm::kTokenBucket || a == Algorithm::kGcra)
      l.burst = rng() % 3 ? 0 : 1 + rng() % 30;
    const std::string name = FormatLimit(l);
    limiter_.Reset("", "k", {l});
    for (int step = 0; step < 300; ++step) {
      clock_.Advance(static_cast<int64_t>(rng() % 200));
      const int64_t n = static_cast<int64_t>(rng() % (l.capacity() + 3));
      switch (rng() % 4) {
        case 0: {
          const Answer r = Refund(l, n);
          ASSERT_LE(r.remaining, l.capacity()) << name;
          break;
        }
        case 1:
          Charge(l, n);
          break;
        default: {
          const Answer before = Peek(l);
          const Answer checked = Check(l, n);
          if (!checked.allowed || n == 0) break;
          const Answer undone = Refund(l, n);
          ExpectAnswer(undone, before, name + " check then refund, step " + std::to_string(step));
          ASSERT_FALSE(HasFailure()) << name;
        }
      }
    }
  }
}

// After a charge, a check passes exactly at the retry_after_ms it was told.
TEST_F(RefundChargeTest, RetryAfterADebtIsExact) {
  std::mt19937_64 rng(77);
  const Algorithm all[] = {Algorithm::kTokenBucket, Algorithm::kGcra,
                           Algorithm::kSlidingLog,  Algorithm::kSlidingWindow,
                           Algorithm::kFixedWindow, Algorithm::kLeakyBucket};
  for (int round = 0; round < 120; ++round) {
    const Algorithm a = all[round % 6];
    const Limit l{a, 1 + static_cast<int64_t>(rng() % 20), 1 + static_cast<int64_t>(rng() % 5000)};
    const std::string key = "k" + std::to_string(round);
    ASSERT_TRUE(limiter_.Check("", key, {l}, 1)->allowed);
    (void)limiter_.Charge("", key, {l}, 1 + static_cast<int64_t>(rng() % (3 * l.limit)));
    const Decision d = *limiter_.Peek("", key, {l}, 1);
    if (d.allowed) continue;  // (a leaky bucket: still room in the queue)
    ASSERT_GT(d.retry_after_ms, 0) << FormatLimit(l);
    clock_.Advance(d.retry_after_ms - 1);
    EXPECT_FALSE(limiter_.Peek("", key, {l}, 1)->allowed) << FormatLimit(l);
    clock_.Advance(1);
    EXPECT_TRUE(limiter_.Check("", key, {l}, 1)->allowed) << FormatLimit(l);
  }
}

// The largest amounts, over and over: no overflow, no crash, the debt saturates far away.
TEST_F(RefundChargeTest, HugeRepeatedAmountsSaturate) {
  const Algorithm all[] = {Algorithm::kTokenBucket, Algorithm::kGcra,
                           Algorithm::kSlidingLog,  Algorithm::kSlidingWindow,
                           Algorithm::kFixedWindow, Algorithm::kLeakyBucket};
  for (Algorithm a : all) {
    for (const Limit& l : {Limit{a, 1, kMaxWindowMs}, Limit{a, kMaxLimit, 1}, Limit{a, 7, 1000}}) {
      const std::string key = FormatLimit(l);
      for (int i = 0; i < 50; ++i) {
        const absl::StatusOr<Decision> d = limiter_.Charge("", key, {l}, kMaxLimit);
        ASSERT_TRUE(d.ok()) << d.status();
        if (i == 0) continue;  // a limit of 2^40 holds the first charge
        ASSERT_FALSE(d->allowed) << key;
        ASSERT_GT(d->retry_after_ms, 0) << key;
        ASSERT_EQ(d->remaining, 0) << key;
      }
      const Decision later = *limiter_.Peek("", key, {l}, 1);
      EXPECT_FALSE(later.allowed);
      EXPECT_GE(later.reset_after_ms, later.retry_after_ms);
      if (a != Algorithm::kLeakyBucket) {
        for (int i = 0; i < 60; ++i) ASSERT_TRUE(limiter_.Refund("", key, {l}, kMaxLimit).ok());
      }
    }
  }
}

}  // namespace
}  // namespace rl
