// Shard routing: the shards take unequal shares of the keys so that their tables do not all double
// at the same key count (memory per key stays near the mean of a table's growth cycle at every
// count, not 31-62 B depending on the count), and each shard's bounds are its share of max_keys,
// so the store still holds max_keys keys, no more and not many fewer.
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "rl/limiter.h"

namespace rl {
namespace {

constexpr int64_t kMinute = 60 * 1000;

std::string Key(size_t i) { return "tenant-" + std::to_string(i) + ":route-/api/v1/orders"; }

// With equal shares, 16 shards of 3906 token-bucket states each (62.5 k keys) sit just after their
// tables doubled (48% full): 56.6 B per key, as 256 shards did at 1 M keys. Spread over the growth
// cycle, every count costs 43-47 B (1.65 slots of 27 bytes per key, plus sampling noise).
TEST(ShardsTest, MemoryPerKeyStaysNearTheMeanAtEveryCount) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.shards = 16, .sweep_interval_ms = 0, .clock = &clock});
  const uint64_t empty = limiter.Stats().memory_bytes;
  const Limit limit{Algorithm::kTokenBucket, 100, kMinute};
  size_t n = 0;
  for (size_t checkpoint : {20000, 31000, 40000, 48000, 57600, 62500, 75000, 90000, 125000}) {
    for (; n < checkpoint; ++n) ASSERT_TRUE(limiter.Check("", Key(n), {limit}).ok());
    const LimiterStats stats = limiter.Stats();
    ASSERT_EQ(stats.keys, n);
    const double per_key = static_cast<double>(stats.memory_bytes - empty) / n;
    EXPECT_LE(per_key, 48.0) << n << " keys";
    EXPECT_GE(per_key, 40.0) << n << " keys";
  }
}

// A sliding-window slot is 32 bytes, 33 with its control byte: ~54 B per key over the growth
// cycle (35-byte slots, three whole words, took ~58). The mean moves by a few tenths from run to
// run: the Limiter's random key seed decides which shard takes which key, so when each shard's
// table doubles (55.58 seen once against a bound of 55.5).
TEST(ShardsTest, SlidingWindowMemoryPerKey) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{.shards = 16, .sweep_interval_ms = 0, .clock = &clock});
  const uint64_t empty = limiter.Stats().memory_bytes;
  const Limit limit{Algorithm::kSlidingWindow, 100, kMinute};
  size_t n = 0;
  double sum = 0;
  int checkpoints = 0;
  for (size_t checkpoint : {20000, 31000, 40000, 48000, 57600, 62500, 75000, 90000, 125000}) {
    for (; n < checkpoint; ++n) ASSERT_TRUE(limiter.Check("", Key(n), {limit}).ok());
    const double per_key = static_cast<double>(limiter.Stats().memory_bytes - empty) / n;
    EXPECT_LE(per_key, 58.0) << n << " keys";
    sum += per_key;
    ++checkpoints;
  }
  EXPECT_LE(sum / checkpoints, 56.2);
}

// Each shard's bound is its share of max_keys: as many keys as max_keys fit with next to no
// evictions (equal bounds would overflow the larger shards while the smaller ones stay part
// empty), and a flood never takes the store past max_keys.
TEST(ShardsTest, MaxKeysHoldsOverAllShards) {
  for (size_t shards : {1, 2, 16, 64}) {
    ManualClock clock(0);
    const size_t max_keys = 640 * shards;  // enough per shard that sampling noise stays small
    Limiter limiter(LimiterOptions{
        .shards = shards, .max_keys = max_keys, .sweep_interval_ms = 0, .clock = &clock});
    const Limit limit{Algorithm::kTokenBucket, 100, kMinute};  // 1 of 100 used: evictable
    for (size_t i = 0; i < max_keys; ++i) ASSERT_TRUE(limiter.Check("", Key(i), {limit}).ok());
    EXPECT_GE(limiter.KeyCount(), max_keys * 95 / 100) << shards << " shards";
    for (size_t i = max_keys; i < 4 * max_keys; ++i) {
      ASSERT_TRUE(limiter.Check("", Key(i), {limit}).ok());
      if (i % 128 == 0) {
        ASSERT_LE(limiter.KeyCount(), max_keys) << shards << " shards";
      }
    }
    EXPECT_LE(limiter.KeyCount(), max_keys) << shards << " shards";
    EXPECT_GE(limiter.KeyCount(), max_keys * 9 / 10) << shards << " shards";
    EXPECT_GT(limiter.Stats().evictions, 0u);
  }
}

// The byte bound is shared the same way.
TEST(ShardsTest, MaxMemoryBytesHoldsOverAllShards) {
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{
      .shards = 16, .max_memory_bytes = 64 * 10000, .sweep_interval_ms = 0, .clock = &clock});
  const Limit limit{Algorithm::kTokenBucket, 100, kMinute};
  for (size_t i = 0; i < 40000; ++i) {
    ASSERT_TRUE(limiter.Check("", Key(i), {limit}).ok());
    if (i % 128 == 0) {
      ASSERT_LE(limiter.KeyCount(), 10000u);
    }
  }
  EXPECT_GE(limiter.KeyCount(), 9000u);
}

// More shards than the routing table can weight (past 4096) fall back to equal shares; every
// shard count answers and bounds alike.
TEST(ShardsTest, EveryShardCountWorks) {
  for (size_t shards : {1, 2, 3, 8, 4096, 8192, 65536}) {
    ManualClock clock(0);
    Limiter limiter(LimiterOptions{.shards = shards, .sweep_interval_ms = 0, .clock = &clock});
    const Limit limit{Algorithm::kFixedWindow, 2, kMinute};
    for (size_t i = 0; i < 2000; ++i) {
      ASSERT_TRUE(limiter.Check("", Key(i), {limit})->allowed);
      ASSERT_TRUE(limiter.Check("", Key(i), {limit})->allowed);
      ASSERT_FALSE(limiter.Check("", Key(i), {limit})->allowed) << shards << " shards";
    }
    EXPECT_EQ(limiter.KeyCount(), 2000u) << shards << " shards";
  }
}

// The shard count for a service's threads: 64 per thread, 256 at least, capped by one shard per
// 256 keys of the bound; Stats() reports the count in force (a power of two).
TEST(ShardsTest, ShardsForThreadsGrowWithThreadsNotBelowTheDefault) {
  EXPECT_EQ(ShardsForThreads(1, 0), 256u);
  EXPECT_EQ(ShardsForThreads(4, 0), 256u);
  EXPECT_EQ(ShardsForThreads(8, 0), 512u);
  EXPECT_EQ(ShardsForThreads(64, 0), 4096u);
  EXPECT_EQ(ShardsForThreads(64, 100000), 256u);  // 390 keys per shard at most, down to 2^8
  EXPECT_EQ(ShardsForThreads(2, 1000), 2u);
  EXPECT_EQ(ShardsForThreads(2, 100), 1u);
  EXPECT_EQ(ShardsForThreads(size_t{1} << 40, size_t{1} << 40), size_t{1} << 16);
  ManualClock clock(0);
  Limiter limiter(LimiterOptions{
      .shards = ShardsForThreads(8, 100000), .sweep_interval_ms = 0, .clock = &clock});
  EXPECT_EQ(limiter.Stats().shards, 256u);
  Limiter automatic(LimiterOptions{.max_keys = 100000, .sweep_interval_ms = 0, .clock = &clock});
  EXPECT_EQ(automatic.Stats().shards, 32u);  // the library's own default is unchanged
}

}  // namespace
}  // namespace rl
