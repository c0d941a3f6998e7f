// Penalty blocks (a limit's BLOCK duration): "5 logins per 15m, then blocked for 1h" exactly, a
// block that its own denials do not extend, RL.RESET lifting it, a peek showing it without
// starting one, what does and does not start one, blocks across snapshots, and blocks that
// eviction never drops.
#include <string>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;

Limit Logins() {
  Limit l{Algorithm::kFixedWindow, 5, 15 * kMinute};
  l.block_ms = kHour;
  return l;
}

class BlockTest : public ::testing::Test {
 protected:
  Decision Check(const Limit& l, int64_t cost = 1, std::string_view key = "user") {
    absl::StatusOr<Decision> d = limiter_.Check("", key, {l}, cost);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : Decision{};
  }

  ManualClock clock_{0, 1'700'000'000'000};
  Limiter limiter_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_}};
};

TEST_F(BlockTest, FiveLoginsPerFifteenMinutesThenBlockedForAnHour) {
  const Limit l = Logins();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Check(l).allowed) << i;
  clock_.Set(10 * kSecond);
  Decision d = Check(l);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.remaining, 0);
  EXPECT_EQ(d.retry_after_ms, kHour);
  EXPECT_EQ(d.reset_after_ms, kHour);
  EXPECT_EQ(limiter_.Stats().blocks, 1u);
  // The window ends after 15 minutes, the block after an hour; denials do not extend it.
  for (int64_t t : {16 * kMinute, 30 * kMinute, kHour + 10 * kSecond - 1}) {
    clock_.Set(t);
    d = Check(l);
    EXPECT_FALSE(d.allowed) << t;
    EXPECT_EQ(d.retry_after_ms, kHour + 10 * kSecond - t) << t;
    EXPECT_EQ(limiter_.Peek("", "user", {l}, 1)->retry_after_ms, kHour + 10 * kSecond - t) << t;
  }
  clock_.Set(kHour + 10 * kSecond);
  d = Check(l);
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.remaining, 4);
  EXPECT_EQ(Check(l, 0, "other").remaining, 5) << "another key is not blocked";
}

TEST_F(BlockTest, ResetLiftsIt) {
  const Limit l = Logins();
  for (int i = 0; i < 6; ++i) Check(l);
  ASSERT_FALSE(Check(l).allowed);
  EXPECT_EQ(limiter_.Reset("", "user", {l}), 1u);
  EXPECT_TRUE(Check(l).allowed);
  // Also when the state itself is gone and only the block is left, and by a spec without BLOCK.
  for (int i = 0; i < 5; ++i) Check(l);
  ASSERT_FALSE(Check(l).allowed);
  clock_.Advance(20 * kMinute);  // the window has ended; the block runs
  Limit plain = l;
  plain.block_ms = 0;
  EXPECT_EQ(limiter_.Reset("", "user", {plain}), 1u);
  EXPECT_TRUE(Check(l).allowed);
  EXPECT_EQ(limiter_.Reset("", "user", {plain}), 1u);
  EXPECT_EQ(limiter_.Reset("", "user", {plain}), 0u);
}

TEST_F(BlockTest, PeekShowsTheBlockItWouldStartButStartsNone) {
  const Limit l = Logins();
  for (int i = 0; i < 5; ++i) Check(l);
  const Decision p = *limiter_.Peek("", "user", {l}, 1);
  EXPECT_FALSE(p.allowed);
  EXPECT_EQ(p.retry_after_ms, kHour);
  EXPECT_EQ(limiter_.Stats().blocks, 0u);
  clock_.Set(15 * kMinute);
  EXPECT_TRUE(Check(l).allowed) << "no block was started";
}

TEST_F(BlockTest, WhatStartsABlockAndWhatDoesNot) {
  const Limit l = Logins();
  // A cost the limit can never hold: denied with "never", no block.
  Decision d = Check(l, 6);
  EXPECT_EQ(d.retry_after_ms, kRetryNever);
  EXPECT_TRUE(Check(l).allowed);
  // A zero-cost call never starts one.
  for (int i = 0; i < 4; ++i) Check(l);
  EXPECT_TRUE(Check(l, 0).allowed);
  EXPECT_EQ(limiter_.Stats().blocks, 0u);
  // Without BLOCK, the same limit neither starts nor sees a block.
  Limit plain = l;
  plain.block_ms = 0;
  EXPECT_EQ(Check(plain).retry_after_ms, 15 * kMinute);
  EXPECT_EQ(limiter_.Stats().blocks, 0u);
  EXPECT_EQ(Check(l).retry_after_ms, kHour);  // now it starts
  clock_.Set(15 * kMinute);
  EXPECT_TRUE(Check(plain).allowed) << "a limit written without BLOCK ignores the block";
  EXPECT_FALSE(Check(l).allowed);
}

TEST_F(BlockTest, OnlyItsOwnDenialStartsIt) {
  Limit wide{Algorithm::kFixedWindow, 100, kMinute};
  wide.block_ms = kHour;
  const Limit narrow{Algorithm::kSlidingLog, 1, kMinute};
  ASSERT_TRUE(limiter_.Check("", "k", {wide, narrow}, 1)->allowed);
  const Decision d = *limiter_.Check("", "k", {wide, narrow}, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.binding, 1);
  EXPECT_EQ(d.retry_after_ms, kMinute);
  EXPECT_EQ(limiter_.Stats().blocks, 0u);
  // A block on one limit denies the check, all or nothing: the other limit keeps its count.
  Limit tight{Algorithm::kGcra, 1, kMinute};
  tight.block_ms = kHour;
  const Limit roomy{Algorithm::kTokenBucket, 10, kMinute};
  ASSERT_TRUE(limiter_.Check("", "m", {tight, roomy}, 1)->allowed);
  EXPECT_EQ(limiter_.Check("", "m", {tight, roomy}, 1)->retry_after_ms, kHour);
  EXPECT_EQ(limiter_.Peek("", "m", {roomy}, 0)->remaining, 9) << "the denial took nothing";
  clock_.Advance(2 * kMinute);
  EXPECT_EQ(limiter_.Check("", "m", {tight, roomy}, 1)->retry_after_ms, kHour - 2 * kMinute);
}

TEST_F(BlockTest, ALongerDenialOutlastsAShortBlock) {
  Limit l{Algorithm::kFixedWindow, 1, kHour};
  l.block_ms = kMinute;
  ASSERT_TRUE(Check(l).allowed);
  EXPECT_EQ(Check(l).retry_after_ms, kHour) << "never earlier than the limit itself allows";
  clock_.Set(kMinute);
  EXPECT_EQ(Check(l).retry_after_ms, kHour - kMinute) << "a new block starts with this denial";
}

TEST_F(BlockTest, RefundsAndChargesShowButDoNotLiftABlock) {
  const Limit l = Logins();
  for (int i = 0; i < 6; ++i) Check(l);
  const Decision r = *limiter_.Refund("", "user", {l}, 5);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.retry_after_ms, kHour);
  EXPECT_FALSE(Check(l).allowed);
}

TEST_F(BlockTest, ExpiredBlocksAreSwept) {
  const Limit l = Logins();
  for (int i = 0; i < 6; ++i) Check(l);
  EXPECT_EQ(limiter_.Stats().blocks, 1u);
  clock_.Set(kHour - 1);
  limiter_.Sweep();
  EXPECT_EQ(limiter_.Stats().blocks, 1u);
  clock_.Set(kHour);
  limiter_.Sweep();
  EXPECT_EQ(limiter_.Stats().blocks, 0u);
  EXPECT_EQ(limiter_.KeyCount(), 0u);
}

TEST_F(BlockTest, BlocksSurviveASnapshot) {
  const Limit l = Logins();
  for (int i = 0; i < 6; ++i) Check(l);
  clock_.Set(20 * kMinute);
  std::string snapshot;
  ASSERT_TRUE(limiter_.ExportState(&snapshot).ok());
  // A new process 5 minutes later: its monotonic clock starts elsewhere.
  ManualClock later(123, clock_.WallMs() + 5 * kMinute);
  Limiter restored(LimiterOptions{.sweep_interval_ms = 0, .clock = &later});
  ASSERT_TRUE(restored.ImportState(snapshot).ok());
  const Decision d = *restored.Check("", "user", {l});
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, kHour - 25 * kMinute);
  later.Advance(kHour - 25 * kMinute);
  EXPECT_TRUE(restored.Check("", "user", {l})->allowed);
}

// A blocked key stays blocked when the store is full, even if its rate state is evicted.
TEST_F(BlockTest, EvictionNeverDropsABlock) {
  Limiter small(
      LimiterOptions{.shards = 1, .max_keys = 64, .sweep_interval_ms = 0, .clock = &clock_});
  Limit l{Algorithm::kFixedWindow, 100, kHour};
  l.block_ms = kHour;
  ASSERT_TRUE(small.Check("", "b", {l}, 10)->allowed);
  ASSERT_FALSE(small.Check("", "b", {l}, 95)->allowed);  // light use: the state is evictable
  const Limit other{Algorithm::kFixedWindow, 100, kHour};
  for (int i = 0; i < 500; ++i) (void)small.Check("", "flood" + std::to_string(i), {other}, 1);
  EXPECT_GT(small.Stats().evictions, 0u);
  const Decision d = *small.Check("", "b", {l}, 1);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after_ms, kHour);
}

TEST_F(BlockTest, ShadowPoliciesStartBlocksButAllow) {
  const Policy trial = *ParsePolicy("trial", "FIXED_WINDOW 1 1m BLOCK 1h SHADOW");
  ASSERT_TRUE(limiter_.Check(trial, "k")->allowed);
  Decision d = *limiter_.Check(trial, "k");
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.shadow_denied);
  clock_.Set(2 * kMinute);
  d = *limiter_.Check(trial, "k");
  EXPECT_TRUE(d.shadow_denied) << "what enforcing would do: still blocked";
}

}  // namespace
}  // namespace rl
