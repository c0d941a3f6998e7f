// Snapshots: a restored limiter answers exactly as the original would at the same wall-clock
// time, although its monotonic clock starts elsewhere; fresh states are dropped; corrupt,
// foreign or misplaced snapshots are refused without changing anything.
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rl/limiter.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace rl {
namespace {

constexpr int64_t kWall = 1'700'000'000'000;

std::vector<Limit> Limits() {
  return {{Algorithm::kTokenBucket, 10, 60000},  {Algorithm::kGcra, 7, 60000, 9},
          {Algorithm::kSlidingLog, 5, 60000},    {Algorithm::kSlidingWindow, 10, 60000},
          {Algorithm::kFixedWindow, 5, 3600000}, {Algorithm::kLeakyBucket, 10, 60000, 4}};
}

class SnapshotTest : public ::testing::Test {
 protected:
  SnapshotTest() {
    for (int i = 0; i < 3; ++i) {
      for (const Limit& l : Limits()) {
        (void)a_.Check("s", "key" + std::to_string(i), {l}, 2);
      }
      clock_a_.Advance(1234);
    }
    (void)a_.Check("s", "short", {{Algorithm::kTokenBucket, 10, 1000}}, 1);  // fresh in 100 ms
    EXPECT_TRUE(a_.ExportState(&snapshot_).ok());
  }

  ManualClock clock_a_{1000, kWall};
  Limiter a_{LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_a_}};
  std::string snapshot_;
};

TEST_F(SnapshotTest, RestoredLimiterAnswersLikeTheOriginal) {
  // The new process: monotonic clock near zero, 5 s of wall time later.
  ManualClock clock_b(77, kWall + 3 * 1234 + 5000);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  ASSERT_TRUE(b.ImportState(snapshot_).ok());
  EXPECT_EQ(b.KeyCount(), a_.KeyCount() - 1);  // the short state was fresh by import time
  clock_a_.Advance(5000);
  for (int step = 0; step < 40; ++step) {
    for (int i = 0; i < 3; ++i) {
      for (const Limit& l : Limits()) {
        const std::string key = "key" + std::to_string(i);
        const Decision x = *a_.Check("s", key, {l}, 1);
        const Decision y = *b.Check("s", key, {l}, 1);
        ASSERT_EQ(x.allowed, y.allowed) << FormatLimit(l) << " step " << step;
        ASSERT_EQ(x.remaining, y.remaining) << FormatLimit(l);
        ASSERT_EQ(x.retry_after_ms, y.retry_after_ms) << FormatLimit(l);
        ASSERT_EQ(x.reset_after_ms, y.reset_after_ms) << FormatLimit(l);
      }
    }
    clock_a_.Advance(997);
    clock_b.Advance(997);
  }
}

TEST_F(SnapshotTest, FewerShardsWorkMoreAreRefused) {
  ManualClock clock_b(0, kWall);
  Limiter fewer(LimiterOptions{.shards = 2, .sweep_interval_ms = 0, .clock = &clock_b});
  EXPECT_TRUE(fewer.ImportState(snapshot_).ok());
  EXPECT_GT(fewer.KeyCount(), 0u);
  Limiter more(LimiterOptions{.shards = 1024, .sweep_interval_ms = 0, .clock = &clock_b});
  EXPECT_TRUE(absl::IsInvalidArgument(more.ImportState(snapshot_)));
  EXPECT_EQ(more.KeyCount(), 0u);
}

TEST_F(SnapshotTest, BadInputIsRefusedAndChangesNothing) {
  ManualClock clock_b(0, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  std::string flipped = snapshot_;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_TRUE(absl::IsDataLoss(b.ImportState(flipped)));
  EXPECT_FALSE(b.ImportState(snapshot_.substr(0, snapshot_.size() - 3)).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(b.ImportState("hello, world")));
  EXPECT_FALSE(b.ImportState("").ok());
  EXPECT_EQ(b.KeyCount(), 0u);
  ASSERT_TRUE(b.ImportState(snapshot_).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(b.ImportState(snapshot_)));
}

// Sets the version field of a snapshot and fixes its checksum.
std::string WithVersion(std::string s, uint32_t version) {
  std::memcpy(&s[8], &version, 4);
  const uint64_t sum = XXH64(s.data(), s.size() - 8, 0);
  std::memcpy(&s[s.size() - 8], &sum, 8);
  return s;
}

// Version 3 (before penalty blocks and leases) still loads; a version 3 snapshot holding their
// records is refused with a clear error, changing nothing.
TEST_F(SnapshotTest, VersionThreeStillLoads) {
  ManualClock clock_b(0, kWall);
  Limiter b(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  ASSERT_TRUE(b.ImportState(WithVersion(snapshot_, 3)).ok());
  EXPECT_EQ(b.KeyCount(), a_.KeyCount());
  Limit blocking{Algorithm::kFixedWindow, 1, 60000};
  blocking.block_ms = 3600000;
  (void)a_.Check("s", "blocked", {blocking});
  (void)a_.Check("s", "blocked", {blocking});
  absl::StatusOr<Lease> lease = a_.Acquire("s", "leased", {{Algorithm::kConcurrency, 2, 60000}});
  ASSERT_TRUE(lease.ok() && lease->held());
  std::string with_both;
  ASSERT_TRUE(a_.ExportState(&with_both).ok());
  Limiter c(LimiterOptions{.sweep_interval_ms = 0, .clock = &clock_b});
  const absl::Status st = c.ImportState(WithVersion(with_both, 3));
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_EQ(std::string(st.message()), "bad snapshot record");
  EXPECT_EQ(c.KeyCount(), 0u);
  ASSERT_TRUE(c.ImportState(with_both).ok());
  EXPECT_EQ(c.Stats().blocks, 1u);
  EXPECT_EQ(c.Stats().lease_sets, 1u);
}

TEST(Snapshot, EmptyLimiterRoundTrips) {
  Limiter a(LimiterOptions{.sweep_interval_ms = 0});
  std::string s;
  ASSERT_TRUE(a.ExportState(&s).ok());
  Limiter b(LimiterOptions{.sweep_interval_ms = 0});
  EXPECT_TRUE(b.ImportState(s).ok());
  EXPECT_EQ(b.KeyCount(), 0u);
}

}  // namespace
}  // namespace rl
